//go:build unix

package workdir

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/otheruser"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// requireUnsafe checks that err refuses path by name, with its owner and
// mode (issue 22: the refusal names what is wrong and what to do).
func requireUnsafe(t *testing.T, err error, path string, uid int, perm os.FileMode) {
	t.Helper()
	require.ErrorIs(t, err, ErrUnsafePath)
	var ue *UnsafePathError
	require.True(t, errors.As(err, &ue), "%v", err)
	require.Equal(t, path, ue.Path, "%v", err)
	require.Equal(t, uid, ue.UID)
	require.Equal(t, perm, ue.Mode.Perm(), "%v", err)
	require.ErrorContains(t, err, path+" (owner uid ")
	require.ErrorContains(t, err, ue.Mode.String())
}

// secretSpec is an instance whose generated file holds a secret: it must
// never land in another user's dir.
func secretSpec(src string) Spec {
	return Spec{Stack: "plat-ue2-dev", Instance: "db", Source: src,
		Files: map[string][]byte{"secret.auto.tfvars.json": []byte(`{"password":"hunter2"}`)}}
}

// otherAct is one thing the other user does in the workdir tests.
type otherAct struct {
	Mkdir        string // create this dir (and parents) with Mode
	Mode         os.FileMode
	Write        string // write Content to this file (parents created 0755)
	Content      string
	From, To     string // rename From to To
	Link, Target string // create symlink Link -> Target
}

// TestOtherUserChild is not a test: it is the body of the other user's
// process (uid 65534, see internal/testkit/otheruser).
func TestOtherUserChild(t *testing.T) {
	var acts []otherAct
	if !otheruser.Spec(t, &acts) {
		return
	}
	for _, a := range acts {
		switch {
		case a.Mkdir != "":
			require.NoError(t, os.MkdirAll(a.Mkdir, 0o755))
			require.NoError(t, os.Chmod(a.Mkdir, a.Mode))
		case a.Write != "":
			require.NoError(t, os.MkdirAll(filepath.Dir(a.Write), 0o755))
			require.NoError(t, os.WriteFile(a.Write, []byte(a.Content), 0o644))
		case a.From != "":
			require.NoError(t, os.Rename(a.From, a.To))
		case a.Link != "":
			require.NoError(t, os.Symlink(a.Target, a.Link))
		}
	}
}

// plantHome is the other user's home for the instance of secretSpec: an
// extra .tf of theirs where the component will be, and a complete stamp.
func plantHome(home string) []otherAct {
	return []otherAct{
		{Mkdir: home, Mode: 0o755},
		{Write: filepath.Join(home, srcDir, "evil.tf"), Content: `resource "terraform_data" "evil" {}`},
		{Write: filepath.Join(home, metaDir, stampFile), Content: `{"version":1,"complete":true,"component":"."}`},
	}
}

// requireUntouched checks that the other user's home holds only what
// they put there: nothing of the victim's (no generated secret, no
// source file) landed in it.
func requireUntouched(t *testing.T, home string) {
	t.Helper()
	require.Equal(t, map[string]string{
		"src/evil.tf":           `resource "terraform_data" "evil" {}`,
		".tfisolate/stamp.json": `{"version":1,"complete":true,"component":"."}`,
	}, regularFiles(t, home))
}

// TestNewRefusesRootOfAnotherUser: another user creates the workdir root
// first, at the fixed path the victim uses (in a sticky dir, as
// /tmp/tfisolate-work would be), with a home of theirs for the victim's
// instance (issue 22 item 3a); or the victim's root is a symlink to a dir
// of theirs (3b). New refuses the root by name, with its owner and mode,
// and nothing of the victim's lands in their dirs.
func TestNewRefusesRootOfAnotherUser(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	id, err := ID("plat-ue2-dev", "db")
	require.NoError(t, err)
	for _, mode := range []os.FileMode{0o755, 0o777} {
		t.Run("root "+mode.String(), func(t *testing.T) {
			otheruser.NeedRoot(t)
			root := filepath.Join(otheruser.Tmp(t), "tfisolate-work")
			otheruser.Do(t, "TestOtherUserChild", append([]otherAct{{Mkdir: root, Mode: mode}}, plantHome(filepath.Join(root, id))...))
			_, err := New(root)
			requireUnsafe(t, err, root, otheruser.ID, mode)
			require.NoDirExists(t, filepath.Join(root, locksDir))
			requireUntouched(t, filepath.Join(root, id))
		})
	}
	t.Run("root is a symlink to their dir", func(t *testing.T) {
		otheruser.NeedRoot(t)
		theirs := filepath.Join(otheruser.Tmp(t), "theirs")
		otheruser.Do(t, "TestOtherUserChild", append([]otherAct{{Mkdir: theirs, Mode: 0o755}}, plantHome(filepath.Join(theirs, id))...))
		root := filepath.Join(t.TempDir(), "root")
		require.NoError(t, os.Symlink(theirs, root))
		_, err := New(root)
		requireUnsafe(t, err, theirs, otheruser.ID, 0o755)
		requireUntouched(t, filepath.Join(theirs, id))
	})
}

// TestNewRefusesUnsafeRoot: a root its group or others can write to is
// refused by name (a sticky one too: sticky dirs are fine above the root,
// not as the root), so is a root below a dir others can write that is not
// sticky; a sticky dir above the root is fine, and a root opened to
// others after New is refused by the next Prepare.
func TestNewRefusesUnsafeRoot(t *testing.T) {
	me := os.Geteuid()
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	mk := func(t *testing.T, p string, mode os.FileMode) string {
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	for _, mode := range []os.FileMode{0o775, 0o777, 0o777 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			root := mk(t, filepath.Join(t.TempDir(), "root"), mode)
			_, err := New(root)
			requireUnsafe(t, err, root, me, mode.Perm())
			require.Empty(t, listDir(t, root), "nothing written in a refused root")
		})
	}
	t.Run("writable parent", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "shared"), 0o777)
		_, err := New(filepath.Join(parent, "root"))
		requireUnsafe(t, err, parent, me, 0o777)
		require.NoDirExists(t, filepath.Join(parent, "root"))
	})
	t.Run("sticky parent is fine", func(t *testing.T) {
		parent := mk(t, filepath.Join(t.TempDir(), "tmp"), 0o777|os.ModeSticky)
		m, err := New(filepath.Join(parent, "root"))
		require.NoError(t, err)
		prepare(t, m, secretSpec(src))
	})
	t.Run("opened to others after New", func(t *testing.T) {
		m := newManager(t)
		require.NoError(t, os.Chmod(m.Root(), 0o777))
		_, err := m.Prepare(context.Background(), secretSpec(src))
		requireUnsafe(t, err, m.Root(), me, 0o777)
		require.Empty(t, listDir(t, m.Root()))
	})
}

// TestPrepareRefusesHomeOfAnotherUser: a home another user made for the
// victim's instance before its first run, in a moment the root was open
// to others (since put right), holding an extra .tf of theirs and a stamp
// (issue 22 item 3a), is never refreshed in place: Prepare refuses it by
// name with its owner and mode, their .tf is never part of a workdir, and
// nothing of the victim's lands in it. A home of the victim's own that
// its group or others can write is refused too.
func TestPrepareRefusesHomeOfAnotherUser(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	t.Run("their home", func(t *testing.T) {
		otheruser.NeedRoot(t)
		m, err := New(filepath.Join(otheruser.Reachable(t, t.TempDir()), "root"))
		require.NoError(t, err)
		home, err := m.Home("plat-ue2-dev", "db")
		require.NoError(t, err)
		require.NoError(t, os.Chmod(m.Root(), 0o777))
		otheruser.Do(t, "TestOtherUserChild", plantHome(home))
		require.NoError(t, os.Chmod(m.Root(), 0o755))
		_, err = m.Prepare(context.Background(), secretSpec(src))
		requireUnsafe(t, err, home, otheruser.ID, 0o755)
		require.ErrorContains(t, err, "remove it")
		requireUntouched(t, home)
	})
	t.Run("own home others can write", func(t *testing.T) {
		m := newManager(t)
		w := prepare(t, m, secretSpec(src))
		require.NoError(t, w.Close())
		require.NoError(t, os.Chmod(filepath.Join(w.Home, srcDir), 0o777))
		_, err := m.Prepare(context.Background(), secretSpec(src))
		requireUnsafe(t, err, filepath.Join(w.Home, srcDir), os.Geteuid(), 0o777)
	})
}

// TestHomeSwappedBetweenRuns: in a root others could write (0777), another
// user swaps the victim's home for one of theirs between two runs (issue
// 22 item 3d). The next Prepare refuses the root by name; with the root
// put right, it refuses their home by name. Their .tf never runs, nothing
// of the victim's lands in their home, and the victim's own home (moved
// aside by them) keeps the victim's state.
func TestHomeSwappedBetweenRuns(t *testing.T) {
	otheruser.NeedRoot(t)
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	m, err := New(filepath.Join(otheruser.Reachable(t, t.TempDir()), "root"))
	require.NoError(t, err)
	w := prepare(t, m, secretSpec(src))
	state := filepath.Join(w.Dir, "terraform.tfstate")
	require.NoError(t, os.WriteFile(state, []byte(`{"version":4,"serial":3,"lineage":"victim","resources":[]}`), 0o600))
	require.NoError(t, w.Close())

	require.NoError(t, os.Chmod(m.Root(), 0o777)) // a root made 0777 by hand
	aside := w.Home + ".victim"
	otheruser.Do(t, "TestOtherUserChild", append([]otherAct{{From: w.Home, To: aside}}, plantHome(w.Home)...))

	_, err = m.Prepare(context.Background(), secretSpec(src))
	requireUnsafe(t, err, m.Root(), os.Geteuid(), 0o777)
	requireUntouched(t, w.Home)

	require.NoError(t, os.Chmod(m.Root(), 0o755))
	_, err = m.Prepare(context.Background(), secretSpec(src))
	requireUnsafe(t, err, w.Home, otheruser.ID, 0o755)
	requireUntouched(t, w.Home)
	b, err := os.ReadFile(filepath.Join(aside, srcDir, "terraform.tfstate"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"lineage":"victim"`)
}

// TestStampPathsStayInside: a stamp whose file or move lists name paths
// outside the home (`../../../x`), or a component that is not local, is
// ignored and the home materialized again (issue 22 item 3c): the file
// outside is not removed, a private dir's file is not moved, and the
// rebuilt stamp lists only local paths. A removal whose way goes through
// a symlink out of the home is refused, never followed.
func TestStampPathsStayInside(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`, "old.tf": "# old"})
	m := newManager(t)
	w := prepare(t, m, secretSpec(src))
	require.NoError(t, w.Close())

	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.txt")
	private := filepath.Join(outside, "private")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o644))
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(private, "id_rsa"), []byte("secret"), 0o600))
	relOut, err := filepath.Rel(filepath.Join(w.Home, srcDir), outside)
	require.NoError(t, err)
	relOut = filepath.ToSlash(relOut)

	forge := func(t *testing.T, edit func(st map[string]any)) {
		t.Helper()
		b, err := os.ReadFile(stampPath(w.Home))
		require.NoError(t, err)
		var st map[string]any
		require.NoError(t, json.Unmarshal(b, &st))
		edit(st)
		b, err = json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(stampPath(w.Home), b, 0o644))
	}
	requireRebuilt := func(t *testing.T) {
		t.Helper()
		w := prepare(t, m, secretSpec(src))
		require.NoError(t, w.Close())
		require.FileExists(t, victim, "a file outside the home is never removed")
		require.FileExists(t, filepath.Join(private, "id_rsa"), "a file outside the home is never moved")
		st := readStamp(w.Home)
		require.NotNil(t, st)
		require.Empty(t, stampProblem(st))
		require.FileExists(t, filepath.Join(w.Dir, "secret.auto.tfvars.json"))
	}
	t.Run("files", func(t *testing.T) {
		forge(t, func(st map[string]any) {
			st["files"] = append(st["files"].([]any), relOut+"/victim.txt")
			st["source"] = "/elsewhere" // not warm: the build removes what the stamp lists
		})
		requireRebuilt(t)
	})
	t.Run("moves", func(t *testing.T) {
		forge(t, func(st map[string]any) { st["moves"] = []any{relOut + "/private"}; st["source"] = "/elsewhere" })
		requireRebuilt(t)
	})
	t.Run("component", func(t *testing.T) {
		forge(t, func(st map[string]any) { st["component"] = relOut; st["source"] = "/elsewhere" })
		requireRebuilt(t)
	})
	t.Run("symlink on the way", func(t *testing.T) {
		// old.tf leaves the source; the build removes the copy it made,
		// but the way to it is now a link to a dir outside.
		require.NoError(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "sub", "old.tf"), []byte("# old"), 0o644))
		w := prepare(t, m, secretSpec(src))
		require.NoError(t, w.Close())
		require.NoError(t, os.RemoveAll(filepath.Join(src, "sub")))
		require.NoError(t, os.WriteFile(filepath.Join(outside, "old.tf"), []byte("theirs"), 0o644))
		require.NoError(t, os.RemoveAll(filepath.Join(w.Dir, "sub")))
		require.NoError(t, os.Symlink(outside, filepath.Join(w.Dir, "sub")))
		_, err := m.Prepare(context.Background(), secretSpec(src))
		require.ErrorIs(t, err, errLink)
		require.FileExists(t, filepath.Join(outside, "old.tf"), "never removed through a link")
	})
}
