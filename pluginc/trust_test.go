//go:build unix

package pluginc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireUnsafe checks that err refuses path by name, with its owner and
// mode, and names the option that allows sharing.
func requireUnsafe(t *testing.T, err error, path string, uid int, perm os.FileMode) {
	t.Helper()
	require.ErrorIs(t, err, ErrUnsafePath)
	var ue *UnsafePathError
	require.True(t, errors.As(err, &ue), "%v", err)
	require.Equal(t, path, ue.Path)
	require.Equal(t, uid, ue.UID)
	require.Equal(t, perm, ue.Mode.Perm(), "%v", err)
	require.ErrorContains(t, err, path+" (owner uid ")
	require.ErrorContains(t, err, ue.Mode.String())
	if !ue.Shared {
		require.ErrorContains(t, err, "WithSharedGroup")
	}
}

// TestOpenRefusesUnsafeRoot: a cache root, or a dir above it, that its
// group or others can write to is refused by name, with its owner and
// mode (invariant 12), unless it is a sticky dir above the root, as /tmp
// is; the root's group may write to it only when the cache is shared
// with that group on purpose (WithSharedGroup).
func TestOpenRefusesUnsafeRoot(t *testing.T) {
	me := os.Geteuid()
	mk := func(t *testing.T, p string, mode os.FileMode) string {
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.Chmod(p, mode)) // whatever the umask
		return p
	}
	t.Run("group-writable root", func(t *testing.T) {
		root := mk(t, filepath.Join(t.TempDir(), "cache"), 0o775)
		_, err := Open(root)
		requireUnsafe(t, err, root, me, 0o775)
		require.ErrorContains(t, err, "can write to it")
		require.NoDirExists(t, filepath.Join(root, stateDir), "nothing written in a refused root")
	})
	t.Run("world-writable sticky root", func(t *testing.T) {
		root := mk(t, filepath.Join(t.TempDir(), "cache"), 0o777|os.ModeSticky)
		_, err := Open(root)
		requireUnsafe(t, err, root, me, 0o777)
		require.ErrorContains(t, err, "others can write to it")
	})
	t.Run("sticky world-writable parent is fine", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "tmp"), 0o777|os.ModeSticky)
		_, err := Open(filepath.Join(parent, "cache"))
		require.NoError(t, err)
	})
	t.Run("group-writable parent", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "shared"), 0o775)
		_, err := Open(filepath.Join(parent, "cache"))
		requireUnsafe(t, err, parent, me, 0o775)
	})
	t.Run("root reached through a link into a group-writable dir", func(t *testing.T) {
		dir := t.TempDir()
		real := mk(t, filepath.Join(dir, "real"), 0o775)
		require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))
		_, err := Open(filepath.Join(dir, "link"))
		require.ErrorIs(t, err, ErrUnsafePath)
		require.ErrorContains(t, err, real)
	})
	t.Run("group-writable root shared with its group on purpose", func(t *testing.T) {
		root := mk(t, filepath.Join(t.TempDir(), "cache"), 0o775)
		_, err := Open(root, WithSharedGroup(os.Getegid()))
		require.NoError(t, err)
		_, err = Open(root, WithSharedGroup(os.Getegid()+1))
		require.ErrorIs(t, err, ErrUnsafePath, "another group's dir is not the shared group's")
	})
	t.Run("umask 0 still makes a private cache", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "a", "cache")
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		_, err := Open(root)
		require.NoError(t, err)
		for _, p := range []string{root, filepath.Join(root, current.packages), filepath.Join(root, current.records)} {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Zero(t, fi.Mode().Perm()&0o022, "%s is %s", p, fi.Mode())
		}
		_, err = Open(root)
		require.NoError(t, err, "and opens again")
	})
}

// TestEveryUseChecksTheWay: a dir on the way to an entry or its record
// that became writable by its group after Open is refused by name on the
// next use; nothing under it is handed out.
func TestEveryUseChecksTheWay(t *testing.T) {
	in := install(t)
	for _, rel := range []string{
		current.packages,
		filepath.Join(current.packages, in.f.p.Hostname),
		current.entryRel(in.pkg.id()),
		filepath.Join(current.records, in.f.p.Hostname, in.f.p.Namespace),
	} {
		t.Run(rel, func(t *testing.T) {
			c := in.f.open(t, in.dir)
			p := filepath.Join(in.dir, rel)
			require.NoError(t, os.Chmod(p, 0o775))
			defer os.Chmod(p, 0o755)
			_, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
			requireUnsafe(t, err, p, os.Geteuid(), 0o775)
			require.Zero(t, c.Stats().Downloads)
		})
	}
}
