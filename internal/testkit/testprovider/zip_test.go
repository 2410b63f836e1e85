package testprovider_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// fakeBinary stands in for the provider where only the zip format matters:
// compressing the real 14 MB binary under -race takes seconds.
func fakeBinary(t *testing.T) (string, []byte) {
	t.Helper()
	content := bytes.Repeat([]byte("#!/bin/false\n"), 1000)
	p := filepath.Join(t.TempDir(), "terraform-provider-tfitest")
	require.NoError(t, os.WriteFile(p, content, 0o755))
	return p, content
}

func TestPackageZipLayout(t *testing.T) {
	bin, content := fakeBinary(t)
	var buf bytes.Buffer
	require.NoError(t, testprovider.PackageZip(&buf, bin, "1.2.3"))

	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Len(t, zr.File, 1, "a provider package holds exactly one file")
	f := zr.File[0]
	require.Equal(t, testprovider.ExecutableName("1.2.3"), f.Name)
	require.Equal(t, os.FileMode(0o755), f.Mode().Perm())
	require.Equal(t, zip.Deflate, f.Method, "real provider packages are deflated")
	rc, err := f.Open()
	require.NoError(t, err)
	defer rc.Close()
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.True(t, bytes.Equal(content, got), "the zipped executable must be the binary")
}

func TestPackageZipIsDeterministic(t *testing.T) {
	bin, _ := fakeBinary(t)
	var a, b bytes.Buffer
	require.NoError(t, testprovider.PackageZip(&a, bin, "1.0.0"))
	require.NoError(t, testprovider.PackageZip(&b, bin, "1.0.0"))
	require.True(t, bytes.Equal(a.Bytes(), b.Bytes()))

	out := filepath.Join(t.TempDir(), "p.zip")
	require.NoError(t, testprovider.WriteZipFile(out, bin, "1.0.0"))
	onDisk, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(a.Bytes(), onDisk), "WriteZipFile writes what PackageZip makes")
}

// TestBinaryZip checks the cached package of the real binary without
// inflating it: name, size and CRC must be those of the binary.
func TestBinaryZip(t *testing.T) {
	bin := testprovider.Build(t)
	p := bin.Zip(t, "1.0.0")
	require.Equal(t, p, bin.Zip(t, "1.0.0"), "Zip is made once per binary and version")
	require.Equal(t, testprovider.ZipName("1.0.0", testprovider.Platform), filepath.Base(p))

	zr, err := zip.OpenReader(p)
	require.NoError(t, err)
	defer zr.Close()
	require.Len(t, zr.File, 1)
	f := zr.File[0]
	require.Equal(t, testprovider.ExecutableName("1.0.0"), f.Name)
	require.Equal(t, uint64(bin.Size), f.UncompressedSize64)
	content, err := os.ReadFile(bin.Path)
	require.NoError(t, err)
	require.Equal(t, crc32.ChecksumIEEE(content), f.CRC32)

	other := bin.Zip(t, "2.0.0")
	require.NotEqual(t, p, other)
	require.Equal(t, filepath.Dir(p), filepath.Dir(other))
}

func TestPackageZipRefusesBadVersions(t *testing.T) {
	bin, _ := fakeBinary(t)
	for _, v := range []string{"", "v1.0.0", "1.0", "latest", "1.0.0/../x"} {
		var buf bytes.Buffer
		err := testprovider.PackageZip(&buf, bin, v)
		require.True(t, errors.Is(err, testprovider.ErrInvalidVersion), "version %q: %v", v, err)
		require.Contains(t, err.Error(), `"`+v+`"`, "the error names the input")
		require.Zero(t, buf.Len(), "nothing is written for a bad version")

		dir := t.TempDir()
		err = testprovider.WriteZipFile(filepath.Join(dir, "p.zip"), bin, v)
		require.ErrorIs(t, err, testprovider.ErrInvalidVersion)
		entries, rerr := os.ReadDir(dir)
		require.NoError(t, rerr)
		require.Empty(t, entries, "nothing is written for a bad version")
	}
}
