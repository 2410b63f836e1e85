//go:build unix

package modstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/pathtrust"
	"github.com/tfisolate/tfisolate/internal/testkit/otheruser"
)

// requireUnsafe checks that err refuses path by name, with its owner and
// mode.
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
}

// TestOpenRefusesUnsafeStore: a store dir, or a dir above it, that its
// group or others can write to is refused by name with its owner and
// mode (invariant 12), unless it is a sticky dir above the store, as /tmp
// is; a store dir that became unsafe after Open is refused on its next
// use.
func TestOpenRefusesUnsafeStore(t *testing.T) {
	me := os.Geteuid()
	mk := func(t *testing.T, p string, mode os.FileMode) string {
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.Chmod(p, mode)) // whatever the umask
		return p
	}
	for _, mode := range []os.FileMode{0o775, 0o777, 0o777 | os.ModeSticky} {
		t.Run("store "+mode.String(), func(t *testing.T) {
			dir := mk(t, filepath.Join(t.TempDir(), "store"), mode)
			_, err := Open(dir)
			requireUnsafe(t, err, dir, me, mode.Perm())
			require.NoDirExists(t, filepath.Join(dir, stateDir), "nothing written in a refused store")
		})
	}
	t.Run("writable parent", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "shared"), 0o777)
		dir := filepath.Join(parent, "store")
		_, err := Open(dir)
		requireUnsafe(t, err, parent, me, 0o777)
		require.NoDirExists(t, dir, "not created in a dir others can write")
	})
	t.Run("sticky parent is fine", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "tmp"), 0o777|os.ModeSticky)
		_, err := Open(filepath.Join(parent, "store"))
		require.NoError(t, err)
	})
	t.Run("state dir", func(t *testing.T) {
		dir := t.TempDir()
		mk(t, filepath.Join(dir, stateDir, tmpDir), 0o777)
		_, err := Open(dir)
		requireUnsafe(t, err, filepath.Join(dir, stateDir, tmpDir), me, 0o777)
	})
	t.Run("unsafe after Open", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(dir, 0o777))
		ran := false
		fill := func(_ context.Context, d string) error { ran = true; return writeTree(d, "x") }
		_, _, err = s.Get(context.Background(), "k", fill)
		requireUnsafe(t, err, dir, me, 0o777)
		_, _, err = s.Replace(context.Background(), "k", nil, fill)
		requireUnsafe(t, err, dir, me, 0o777)
		_, err = s.Copy(context.Background(), "k", filepath.Join(t.TempDir(), "copy"), fill)
		requireUnsafe(t, err, dir, me, 0o777)
		require.False(t, ran, "nothing fetched into a store others can write")
	})
}

// TestFillKeepsNothingWritableByOthers: whatever modes fill writes (a
// module archive unpacked under umask 0), the entry's paths are
// writable by no one but their owner, so the store never keeps what
// others could change.
func TestFillKeepsNothingWritableByOthers(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	dir, _, err := s.Get(context.Background(), "k", func(_ context.Context, d string) error {
		require.NoError(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "sub", "main.tf"), []byte("x"), 0o644))
		require.NoError(t, os.Chmod(filepath.Join(d, "sub"), 0o777))
		return os.Chmod(filepath.Join(d, "sub", "main.tf"), 0o666)
	})
	require.NoError(t, err)
	for p, want := range map[string]os.FileMode{"sub": 0o755, "sub/main.tf": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, p))
		require.NoError(t, err)
		require.Equal(t, want, fi.Mode().Perm(), p)
	}
	_, filled, err := s.Get(context.Background(), "k", func(context.Context, string) error { return errors.New("no refill") })
	require.NoError(t, err)
	require.False(t, filled, "the entry is the store's own and intact")
}

// otherAct is what the other user does in the module store tests.
type otherAct struct {
	Mkdir string // create this dir (and its parents) with Mode
	Mode  os.FileMode
	// Plant: an entry for Key in the store Store, a tree holding Content
	// and a manifest that matches it exactly.
	Store, Key, Content string
}

// TestOtherUserChild is not a test: it is the body of the other user's
// process (uid 65534, see internal/testkit/otheruser).
func TestOtherUserChild(t *testing.T) {
	var acts []otherAct
	if !otheruser.Spec(t, &acts) {
		return
	}
	for _, a := range acts {
		if a.Mkdir != "" {
			require.NoError(t, os.MkdirAll(a.Mkdir, 0o755))
			require.NoError(t, os.Chmod(a.Mkdir, a.Mode))
		}
		if a.Store == "" {
			continue
		}
		entry := filepath.Join(a.Store, hashKey(a.Key))
		require.NoError(t, os.MkdirAll(filepath.Join(entry, treeDir), 0o755))
		require.NoError(t, writeTree(filepath.Join(entry, treeDir), a.Content))
		files, err := recordTree(filepath.Join(entry, treeDir))
		require.NoError(t, err)
		b, err := (&manifest{Version: manifestVersion, Key: a.Key, Files: files}).encode()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(entry, manifestName), b, 0o644))
	}
}

// TestOpenRefusesStoreOfAnotherUser: another user creates the store dir
// first, at the fixed path the victim uses, and plants an entry with a
// module of theirs and a manifest that matches it (issue 22 item 2).
// Open refuses the dir by name, with its owner and mode, whatever mode
// they gave it: their module is never handed out, and nothing of the
// victim's lands in their dir.
func TestOpenRefusesStoreOfAnotherUser(t *testing.T) {
	for _, mode := range []os.FileMode{0o755, 0o777} {
		t.Run(mode.String(), func(t *testing.T) {
			otheruser.NeedRoot(t)
			dir := filepath.Join(otheruser.Tmp(t), "tfisolate-modules")
			otheruser.Do(t, "TestOtherUserChild", []otherAct{{Mkdir: dir, Mode: mode}, {Store: dir, Key: "k", Content: "evil"}})
			s, err := Open(dir)
			requireUnsafe(t, err, dir, otheruser.ID, mode)
			require.Nil(t, s)
			require.NoDirExists(t, filepath.Join(dir, stateDir), "nothing of the victim's in their dir")
		})
	}
}

// TestForeignEntryRefilled: an entry another user planted (in a moment
// the victim's store was writable by others, since put right) with a
// module of theirs and a matching manifest is never handed out: Get
// treats it as damaged and refills the key into a private entry (issue
// 22 item 2).
func TestForeignEntryRefilled(t *testing.T) {
	otheruser.NeedRoot(t)
	dir := filepath.Join(otheruser.Reachable(t, t.TempDir()), "store")
	s, err := Open(dir)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o777))
	otheruser.Do(t, "TestOtherUserChild", []otherAct{{Store: dir, Key: "k", Content: "evil"}})
	require.NoError(t, os.Chmod(dir, 0o755))

	got, filled, err := s.Get(context.Background(), "k", func(_ context.Context, d string) error { return writeTree(d, "genuine") })
	require.NoError(t, err)
	require.True(t, filled, "the planted entry was refilled")
	tree, err := readTree(got)
	require.NoError(t, err)
	require.Equal(t, wantTree("genuine"), tree)
	fi, err := os.Stat(filepath.Join(dir, hashKey("k")))
	require.NoError(t, err)
	require.Empty(t, pathtrustForeign(fi), "the entry is the victim's own now")
	require.EqualValues(t, 1, s.Stats().Repairs)
}

func pathtrustForeign(fi os.FileInfo) string { return pathtrust.Effective().Foreign(fi) }
