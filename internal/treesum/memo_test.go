package treesum

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	stat := func() os.FileInfo {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi
	}
	sum := sha256.Sum256([]byte("one"))
	var nilMemo *Memo
	nilMemo.Remember(p, stat(), time.Now().Add(time.Second), sum)
	_, ok := nilMemo.Lookup(p, stat())
	require.False(t, ok, "a nil memo remembers nothing")

	var m Memo

	// Read right after the write: in the racy window, not remembered.
	m.Remember(p, stat(), time.Now(), sum)
	_, ok = m.Lookup(p, stat())
	require.False(t, ok, "a file changed within the racy window of the read is not remembered")

	// Read well after the write (as if the read began a second later).
	fi := stat()
	m.Remember(p, fi, time.Now().Add(time.Second), sum)
	got, ok := m.Lookup(p, stat())
	require.True(t, ok)
	require.Equal(t, sum, got)
	_, ok = m.Lookup(p+"x", fi)
	require.False(t, ok, "by path")

	require.NoError(t, os.Chmod(p, 0o600))
	_, ok = m.Lookup(p, stat())
	require.False(t, ok, "a chmod is a new version")

	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return // no ctime shown: what follows is Spec.Rehash's case there
	}
	m.Remember(p, stat(), time.Now().Add(time.Second), sum)
	require.NoError(t, os.WriteFile(p, []byte("two"), 0o600)) // same size
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	_, ok = m.Lookup(p, stat())
	require.False(t, ok, "a rewrite of the same size with its mtime put back is a new version (ctime)")

}
