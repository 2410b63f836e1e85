package reflink_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/reflink"
)

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("data"), 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(src, "top"), []byte("top"), 0o600))
	require.NoError(t, os.Symlink("a/b/f", filepath.Join(src, "link")))

	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, reflink.CopyTree(dst, src))

	got, err := os.ReadFile(filepath.Join(dst, "a", "b", "f"))
	require.NoError(t, err)
	require.Equal(t, "data", string(got))
	link, err := os.Readlink(filepath.Join(dst, "link"))
	require.NoError(t, err)
	require.Equal(t, "a/b/f", link, "a symlink is copied as a link, its target as written")

	// Writing the copy never reaches the source: every file is a new inode.
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a", "b", "f"), []byte("changed"), 0o640))
	got, err = os.ReadFile(filepath.Join(src, "a", "b", "f"))
	require.NoError(t, err)
	require.Equal(t, "data", string(got))

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dst, "top"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "permission bits are kept")
	}

	require.Error(t, reflink.CopyTree(dst, src), "a file already in dst is never overwritten")
}
