//go:build linux || darwin || freebsd

package workdir

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// allocatedBytes is the space p takes on disk.
func allocatedBytes(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

func sha256File(t *testing.T, p string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return [sha256.Size]byte(h.Sum(nil))
}

// TestPrepareKeepsHoles (issue 22 item 9): a real sparse file in the
// source (256 MiB long, 8 KiB of data) is materialized into two
// instances with its holes kept: each copy has the source's bytes and
// takes about as much disk as the source, not 256 MiB; after the source
// file changes, the refreshed copy is sparse too.
func TestPrepareKeepsHoles(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	const size = 256 << 20
	blob := filepath.Join(src, "blob.img")
	f, err := os.Create(blob)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	_, err = f.WriteAt(bytes.Repeat([]byte("a"), 4<<10), 0)
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte("b"), 4<<10), size/2)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	if allocatedBytes(t, blob) > 1<<20 {
		t.Skipf("the filesystem of %s does not keep holes", src)
	}

	m := newManager(t)
	for _, inst := range []string{"a", "b"} {
		w := prepare(t, m, Spec{Stack: "s", Instance: inst, Source: src})
		cp := filepath.Join(w.Dir, "blob.img")
		require.Equal(t, sha256File(t, blob), sha256File(t, cp))
		require.Less(t, allocatedBytes(t, cp), int64(1<<20), "%s: the copy allocated its holes", inst)
		require.NoError(t, w.Close())
	}

	f, err = os.OpenFile(blob, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte("c"), 4<<10), size-4<<10)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	w := prepare(t, m, Spec{Stack: "s", Instance: "a", Source: src})
	cp := filepath.Join(w.Dir, "blob.img")
	require.Equal(t, sha256File(t, blob), sha256File(t, cp))
	require.Less(t, allocatedBytes(t, cp), int64(1<<20), "the refreshed copy allocated its holes")
}
