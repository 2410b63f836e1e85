package pluginc

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// zipFile writes a zip of the given entries (name, content) to a temp file.
func zipFile(t *testing.T, entries ...[2]string) *os.File {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "pkg.zip")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestUnzipLimits(t *testing.T) {
	zeros := strings.Repeat("\x00", 4<<20) // compresses to a few KiB
	for _, tc := range []struct {
		name    string
		entries [][2]string
		max     int64
		want    string
	}{
		{"duplicate entry", [][2]string{{"a", "1"}, {"a", "2"}}, 0, `https://example.test/p.zip: entry "a" appears more than once`},
		{"duplicate after cleaning", [][2]string{{"d/a", "1"}, {"d/./a", "2"}}, 0, `entry "d/./a" appears more than once`},
		{"file where a dir is", [][2]string{{"f", "1"}, {"f/g", "2"}}, 0, `entry "f/g"`},
		{"bomb", [][2]string{{"big", zeros}}, 1 << 20, "unpacks to more than the limit of 1048576 bytes"},
		{"many small", [][2]string{{"a", zeros[:600<<10]}, {"b", zeros[:600<<10]}}, 1 << 20, "unpacks to more than the limit of 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			err := unzip(zipFile(t, tc.entries...), dir, unzipOptions{name: "https://example.test/p.zip", maxSize: tc.max})
			require.ErrorIs(t, err, ErrBadPackage)
			require.ErrorContains(t, err, "https://example.test/p.zip")
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "file exists")
		})
	}
	// Within the limit, everything is there.
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, unzip(zipFile(t, [2]string{"big", zeros}), dir, unzipOptions{maxSize: 4 << 20}))
}

// TestUnzipLimitEnforcedWhileCopying: headers that understate the size do
// not get past the cap (archive/zip or unzip's own count stops the copy).
func TestUnzipLimitEnforcedWhileCopying(t *testing.T) {
	zeros := make([]byte, 2<<20)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "liar", Method: zip.Store, UncompressedSize64: 10, CompressedSize64: uint64(len(zeros))})
	require.NoError(t, err)
	_, err = w.Write(zeros)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "liar.zip")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	err = unzip(f, filepath.Join(t.TempDir(), "out"), unzipOptions{maxSize: 1 << 20})
	require.ErrorIs(t, err, ErrBadPackage)
}

// failingWriter fails every write to files whose name contains match.
func failingWriter(match string, errno syscall.Errno) func(io.Writer) io.Writer {
	return func(w io.Writer) io.Writer {
		f, ok := w.(*os.File)
		if !ok || !strings.Contains(f.Name(), match) {
			return w
		}
		return writerFunc(func([]byte) (int, error) {
			return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: errno}
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestFullDisk: a write that fails while downloading or unpacking is
// reported as the write error (ENOSPC), not as a truncated body or a bad
// archive, is not retried, and leaves nothing behind.
func TestFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name, match string
	}{
		{"download", ".zip"},
		{"unpack", ".d" + string(filepath.Separator)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startRegistry(t, 0, []string{"1.0.0"})
			c := f.open(t, t.TempDir())
			c.env.testHookWriter = failingWriter(tc.match, syscall.ENOSPC)
			_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.ErrorContains(t, err, "no space left on device")
			require.NotErrorIs(t, err, ErrDownload)
			require.NotErrorIs(t, err, ErrBadPackage)
			require.NotContains(t, err.Error(), "truncated")
			var ie *InstallError
			require.ErrorAs(t, err, &ie)
			require.Zero(t, c.Stats().Retries)
			require.Equal(t, 1, f.srv.Downloads(f.key("1.0.0")))
			requireEmptyCache(t, c)
		})
	}
}

// TestUnpackedSizeLimit: a package over WithMaxUnpackedSize is refused
// with an error naming the archive, and nothing enters the cache.
func TestUnpackedSizeLimit(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	c := f.open(t, t.TempDir(), WithMaxUnpackedSize(1<<10))
	_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrBadPackage)
	require.ErrorContains(t, err, "unpacks to more than the limit of 1024 bytes")
	require.ErrorContains(t, err, "terraform-provider-tfitest_1.0.0_")
	requireEmptyCache(t, c)
}
