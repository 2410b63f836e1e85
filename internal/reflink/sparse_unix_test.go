//go:build linux || darwin || freebsd

package reflink_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/reflink"
)

// writeSparse writes a real sparse file of size bytes at p: data only at
// the given offsets (4 KiB of non-zero bytes each), holes elsewhere. It
// skips the test when the filesystem allocates the holes anyway.
func writeSparse(t *testing.T, p string, size int64, at ...int64) {
	t.Helper()
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(size))
	for i, off := range at {
		_, err := f.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 4<<10), off)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	if allocated(t, p) >= size/2 {
		t.Skipf("the filesystem of %s does not keep holes", p)
	}
}

// allocated is the space p takes on disk.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

func fileSHA(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// TestCopyKeepsHoles copies a 64 MiB sparse file holding 12 KiB of data
// (at the start, in the middle and ending at the end): the copy has the
// same size and bytes, its holes stay holes (it takes about as much
// space as the source, not 64 MiB), and its offset is at the end.
func TestCopyKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	const size = 64 << 20
	srcPath := filepath.Join(dir, "src")
	writeSparse(t, srcPath, size, 0, 32<<20, size-4<<10)
	src, err := os.Open(srcPath)
	require.NoError(t, err)
	defer src.Close()
	dstPath := filepath.Join(dir, "dst")
	dst, err := os.Create(dstPath)
	require.NoError(t, err)
	cloned, err := reflink.Copy(dst, src)
	require.NoError(t, err)
	t.Logf("cloned=%v", cloned)
	off, err := dst.Seek(0, io.SeekCurrent)
	require.NoError(t, err)
	require.Equal(t, int64(size), off)
	require.NoError(t, dst.Close())

	fi, err := os.Stat(dstPath)
	require.NoError(t, err)
	require.Equal(t, int64(size), fi.Size())
	require.Equal(t, fileSHA(t, srcPath), fileSHA(t, dstPath))
	require.Less(t, allocated(t, dstPath), int64(1<<20), "the copy allocated its holes (source: %d bytes on disk)", allocated(t, srcPath))
}

// TestCopyAllHole copies a sparse file with no data at all.
func TestCopyAllHole(t *testing.T) {
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src")
	writeSparse(t, srcPath, 8<<20)
	src, err := os.Open(srcPath)
	require.NoError(t, err)
	defer src.Close()
	dstPath := filepath.Join(dir, "dst")
	dst, err := os.Create(dstPath)
	require.NoError(t, err)
	_, err = reflink.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	require.Equal(t, fileSHA(t, srcPath), fileSHA(t, dstPath))
	require.Less(t, allocated(t, dstPath), int64(1<<20))
}
