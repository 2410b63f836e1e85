//go:build unix

package treesum

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusesFIFOs: a named pipe in the tree is refused by name by every
// listing, and never opened (opening it to read would block until a
// writer came). A file swapped for a FIFO after it was listed is refused
// by the same name without blocking.
func TestRefusesFIFOs(t *testing.T) {
	dir := writeTree(t)
	rec, err := Record(dir)
	require.NoError(t, err)
	pipe := filepath.Join(dir, "sub", "pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	for name, run := range map[string]func() error{
		"Record": func() error { _, err := Record(dir); return err },
		"Scan":   func() error { _, err := Scan(dir); return err },
		"Check":  func() error { _, _, err := Check(dir, rec); return err },
		"Verify": func() error { _, _, err := Verify(dir, rec); return err },
	} {
		err := run()
		require.ErrorIs(t, err, ErrSpecialFile, name)
		require.ErrorContains(t, err, "sub/pipe is a named pipe, not a regular file, directory or symlink", name)
	}

	_, err = hashEntry(pipe, "sub/pipe")
	require.ErrorIs(t, err, ErrSpecialFile)
	require.ErrorContains(t, err, "sub/pipe is a named pipe")
}

// TestHashRefusesSwappedLinks: a file swapped for a symlink after it was
// listed is not followed when it is hashed.
func TestHashRefusesSwappedLinks(t *testing.T) {
	dir := writeTree(t)
	_, err := hashEntry(filepath.Join(dir, "sub", "link.tf"), "sub/link.tf")
	require.ErrorIs(t, err, syscall.ELOOP)
	require.ErrorContains(t, err, "sub/link.tf")
	_, err = os.Stat(filepath.Join(dir, "sub", "a.tf"))
	require.NoError(t, err)
}
