//go:build unix

package modstore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGetRefusesSpecialFiles: a fill that leaves a FIFO (or anything but
// directories, regular files and symlinks) stores nothing and gets an
// ErrBadTree naming the path; the FIFO is never opened.
func TestGetRefusesSpecialFiles(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	_, filled, err := s.Get(context.Background(), "k", func(_ context.Context, dir string) error {
		if err := writeTree(dir, "v"); err != nil {
			return err
		}
		return syscall.Mkfifo(filepath.Join(dir, "sub", "pipe"), 0o644)
	})
	require.ErrorIs(t, err, ErrBadTree)
	require.ErrorContains(t, err, "sub/pipe is a named pipe")
	require.ErrorContains(t, err, `key "k"`)
	require.False(t, filled)
	requireNoEntries(t, s.Dir())
	requireNoLeftovers(t, s.Dir())
	require.Equal(t, Stats{}, s.Stats())
}

// TestGetRefusesUnreadableFiles: a file fill left unreadable cannot be
// hashed, so it is not stored.
func TestGetRefusesUnreadableFiles(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	_, _, err = s.Get(context.Background(), "k", func(_ context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o000)
	})
	require.ErrorIs(t, err, ErrBadTree)
	require.ErrorContains(t, err, "secret")
	requireNoEntries(t, s.Dir())
	requireNoLeftovers(t, s.Dir())
}
