package reflink_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/reflink"
)

func TestCopyIsIndependentOfSource(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 256<<10)
	_, _ = rand.Read(data)
	srcPath := filepath.Join(dir, "src")
	require.NoError(t, os.WriteFile(srcPath, data, 0o644))

	src, err := os.Open(srcPath)
	require.NoError(t, err)
	defer src.Close()
	dstPath := filepath.Join(dir, "dst")
	dst, err := os.Create(dstPath)
	require.NoError(t, err)
	cloned, err := reflink.Copy(dst, src)
	require.NoError(t, err)
	t.Logf("cloned=%v", cloned)
	_, err = dst.WriteString("tail")
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	got, err := os.ReadFile(dstPath)
	require.NoError(t, err)
	require.True(t, bytes.Equal(append(append([]byte{}, data...), "tail"...), got))

	// Writing the copy must never reach the source (no hard link, no shared inode).
	require.NoError(t, os.WriteFile(dstPath, []byte("changed"), 0o644))
	again, err := os.ReadFile(srcPath)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, again))
	si, err := os.Stat(srcPath)
	require.NoError(t, err)
	di, err := os.Stat(dstPath)
	require.NoError(t, err)
	require.False(t, os.SameFile(si, di))
}
