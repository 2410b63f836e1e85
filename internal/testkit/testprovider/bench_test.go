package testprovider_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// BenchmarkPackageZip measures packaging a padded provider in-process (under
// -race this is what Binary.Zip avoids by using its helper).
func BenchmarkPackageZip(b *testing.B) {
	bin := testprovider.Build(b, testprovider.WithPadding(paddedSize))
	b.SetBytes(bin.Size)
	for b.Loop() {
		if err := testprovider.PackageZip(io.Discard, bin.Path, "1.0.0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFilesystemMirror measures laying out a two-version mirror of
// the padded provider once its zips are cached: the per-test cost.
func BenchmarkWriteFilesystemMirror(b *testing.B) {
	bin := testprovider.Build(b, testprovider.WithPadding(paddedSize))
	dir := b.TempDir()
	b.SetBytes(2 * bin.Size)
	for i := 0; b.Loop(); i++ {
		testprovider.WriteFilesystemMirror(b, filepath.Join(dir, string(rune('a'+i%26))), bin, "1.0.0", "1.1.0")
	}
}
