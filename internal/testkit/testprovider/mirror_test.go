package testprovider_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

func TestWriteFilesystemMirrorLayout(t *testing.T) {
	bin := testprovider.Build(t)
	dir := t.TempDir()
	paths := testprovider.WriteFilesystemMirror(t, dir, bin, "1.0.0", "1.1.0")

	pkgDir := filepath.Join(dir, "registry.tfisolate.test", "tfisolate", "tfitest")
	require.Equal(t, []string{
		filepath.Join(pkgDir, "terraform-provider-tfitest_1.0.0_"+testprovider.Platform+".zip"),
		filepath.Join(pkgDir, "terraform-provider-tfitest_1.1.0_"+testprovider.Platform+".zip"),
	}, paths)
	entries, err := os.ReadDir(pkgDir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "nothing but the packages is written")

	// The mirror holds private copies: changing one leaves the shared zip alone.
	require.NoError(t, os.WriteFile(paths[0], []byte("torn"), 0o644))
	shared, err := os.ReadFile(bin.Zip(t, "1.0.0"))
	require.NoError(t, err)
	require.NotEqual(t, "torn", string(shared))
}

func TestCLIConfigFilesystemMirror(t *testing.T) {
	got := string(testprovider.CLIConfigFilesystemMirror(`/tmp/my "mirror"`))
	require.Contains(t, got, `path    = "/tmp/my \"mirror\""`)
	require.Contains(t, got, `include = ["registry.tfisolate.test/*/*"]`)
	require.Contains(t, got, `exclude = ["registry.tfisolate.test/*/*"]`)
}

// TestWriteFilesystemMirrorConcurrently has parallel tests lay out mirrors
// of the same versions at once, as other packages' tests do: every mirror
// must get complete, identical packages.
func TestWriteFilesystemMirrorConcurrently(t *testing.T) {
	bin := testprovider.Build(t, testprovider.WithPadding(paddedSize))
	const n = 4
	paths := make([][]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { paths[i] = testprovider.WriteFilesystemMirror(t, t.TempDir(), bin, "1.0.0", "1.1.0") })
	}
	wg.Wait()
	for _, ps := range paths {
		require.Len(t, ps, 2)
		for j, p := range ps {
			require.Equal(t, fileSHA256(t, paths[0][j]), fileSHA256(t, p))
		}
	}
}
