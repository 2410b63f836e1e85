package treesum

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kinds lists changes as "kind path", the way the tables below expect them.
func kinds(cs Changes) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind.String()+" "+c.Path)
	}
	return out
}

// replaceFile puts content at p through a new inode, as a restore or an
// attacker would.
func replaceFile(t *testing.T, p string, content []byte, mode os.FileMode) {
	t.Helper()
	tmp := p + ".new"
	require.NoError(t, os.WriteFile(tmp, content, mode))
	require.NoError(t, os.Chmod(tmp, mode))
	require.NoError(t, os.Rename(tmp, p))
}

// ctimeMoves makes sure p's ctime differs from the one recorded for it,
// chmodding it to its own mode (which sets ctime and nothing else) until
// the filesystem's clock has ticked past the record: a change made in the
// tick the record was taken in looks like none to the cheap check, as
// the package doc says.
func ctimeMoves(t *testing.T, p string, rec Entry) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		if stampOf(fi).Ctime != rec.Stamp.Ctime {
			return
		}
		require.True(t, time.Now().Before(deadline), "ctime of %s did not move", p)
		require.NoError(t, os.Chmod(p, fi.Mode().Perm()))
	}
}

func entryOf(t *testing.T, rec Tree, path string) Entry {
	t.Helper()
	for _, e := range rec {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("%s not recorded", path)
	return Entry{}
}

// TestCheckAndVerify: every kind of change to a recorded tree is found
// and named, by the cheap check where it can see it and always by the
// full one; the descriptions say what differs.
func TestCheckAndVerify(t *testing.T) {
	haveCtime := runtime.GOOS == "linux" || runtime.GOOS == "darwin"
	cases := []struct {
		name   string
		change func(t *testing.T, dir string, rec Tree)
		check  []string // what Check finds
		verify []string // what Verify finds
		why    string   // in Verify's description
	}{
		{"unchanged", func(*testing.T, string, Tree) {}, nil, nil, ""},
		{"file removed", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Remove(filepath.Join(dir, "sub", "a.tf")))
		}, []string{"missing sub/a.tf"}, []string{"missing sub/a.tf"}, "sub/a.tf is missing"},
		{"file added", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.tf"), nil, 0o644))
		}, []string{"added extra.tf"}, []string{"added extra.tf"}, "extra.tf was not part of the recorded tree"},
		{"directory removed", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Remove(filepath.Join(dir, "sub", "empty")))
		}, []string{"missing sub/empty"}, []string{"missing sub/empty"}, "sub/empty is missing"},
		{"directory added with a file", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "new"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "new", "f"), nil, 0o644))
		}, []string{"added new", "added new/f"}, []string{"added new", "added new/f"}, "new was not part"},
		{"file replaced by a directory", func(t *testing.T, dir string, _ Tree) {
			p := filepath.Join(dir, "main.tf")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}, []string{"type main.tf"}, []string{"type main.tf"}, "main.tf is a directory, a regular file when recorded"},
		{"symlink replaced by its target's content", func(t *testing.T, dir string, _ Tree) {
			p := filepath.Join(dir, "sub", "link.tf")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.WriteFile(p, []byte("content of sub/a.tf\n"), 0o644))
		}, []string{"type sub/link.tf"}, []string{"type sub/link.tf"}, "sub/link.tf is a regular file, a symlink when recorded"},
		{"file made a symlink", func(t *testing.T, dir string, _ Tree) {
			p := filepath.Join(dir, "main.tf")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("sub/a.tf", p))
		}, []string{"type main.tf"}, []string{"type main.tf"}, "main.tf is a symlink, a regular file when recorded"},
		{"file mode", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "sub", "run.sh"), 0o644))
		}, []string{"mode sub/run.sh"}, []string{"mode sub/run.sh"}, "sub/run.sh has mode -rw-r--r--, -rwxr-xr-x when recorded"},
		{"directory mode", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "sub", "empty"), 0o700))
		}, []string{"mode sub/empty"}, []string{"mode sub/empty"}, "sub/empty has mode drwx------, drwxr-xr-x when recorded"},
		{"file grown", func(t *testing.T, dir string, _ Tree) {
			f, err := os.OpenFile(filepath.Join(dir, "main.tf"), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("more\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, []string{"size main.tf"}, []string{"size main.tf", "content main.tf"}, "main.tf has 24 bytes, 19 when recorded"},
		{"symlink retargeted", func(t *testing.T, dir string, _ Tree) {
			p := filepath.Join(dir, "sub", "link.tf")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("run.sh", p))
		}, []string{"target sub/link.tf"}, []string{"target sub/link.tf"}, `sub/link.tf points to "run.sh", "a.tf" when recorded`},
		{"rewritten in place, same size and mtime", func(t *testing.T, dir string, rec Tree) {
			if !haveCtime {
				t.Skip("only mtime is stamped here: the cheap check cannot see this")
			}
			p := filepath.Join(dir, "main.tf")
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, []byte("CONTENT OF MAIN.TF\n"), 0o644))
			require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
			ctimeMoves(t, p, entryOf(t, rec, "main.tf"))
		}, []string{"stamp main.tf"}, []string{"content main.tf"}, "main.tf has SHA-256 "},
		{"touched", func(t *testing.T, dir string, _ Tree) {
			later := time.Now().Add(time.Hour)
			require.NoError(t, os.Chtimes(filepath.Join(dir, "sub", "a.tf"), later, later))
		}, []string{"stamp sub/a.tf"}, []string{"stamp sub/a.tf"}, "sub/a.tf changed since it was recorded"},
		{"replaced by the same content", func(t *testing.T, dir string, _ Tree) {
			replaceFile(t, filepath.Join(dir, "sub", "run.sh"), []byte("content of sub/run.sh\n"), 0o755)
		}, []string{"stamp sub/run.sh"}, []string{"stamp sub/run.sh"}, "sub/run.sh changed since it was recorded"},
		{"replaced by other content of the same size", func(t *testing.T, dir string, _ Tree) {
			replaceFile(t, filepath.Join(dir, "sub", "run.sh"), []byte("CONTENT OF SUB/RUN.SH\n"), 0o755)
		}, []string{"stamp sub/run.sh"}, []string{"content sub/run.sh"}, "sub/run.sh has SHA-256"},
		{"several at once", func(t *testing.T, dir string, _ Tree) {
			require.NoError(t, os.Remove(filepath.Join(dir, "main.tf")))
			require.NoError(t, os.Chmod(filepath.Join(dir, "sub", "run.sh"), 0o700))
			require.NoError(t, os.Truncate(filepath.Join(dir, "sub", "run.sh"), 0))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "z"), nil, 0o644))
		}, []string{"missing main.tf", "mode sub/run.sh", "size sub/run.sh", "added z"},
			[]string{"missing main.tf", "mode sub/run.sh", "size sub/run.sh", "content sub/run.sh", "added z"},
			"main.tf is missing; sub/run.sh has mode -rwx------, -rwxr-xr-x when recorded; sub/run.sh has 0 bytes, 22 when recorded; and 2 more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t)
			rec, err := Record(dir)
			require.NoError(t, err)
			tc.change(t, dir, rec)

			now, changes, err := Check(dir, rec)
			require.NoError(t, err)
			require.Equal(t, tc.check, kinds(changes), "Check")
			for _, e := range now {
				require.Empty(t, e.SHA256, "Check read %s", e.Path)
			}

			now, changes, err = Verify(dir, rec)
			require.NoError(t, err)
			require.Equal(t, tc.verify, kinds(changes), "Verify")
			require.Contains(t, changes.String(), tc.why)
			fresh, err := Record(dir)
			require.NoError(t, err)
			require.Equal(t, fresh, now, "Verify's tree is the tree's record")
		})
	}
}

// TestRestamp: when only stamps moved, Verify says so and its tree is the
// record to keep: the cheap check passes against it, and still notices
// the next change.
func TestRestamp(t *testing.T) {
	dir := writeTree(t)
	rec, err := Record(dir)
	require.NoError(t, err)
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "main.tf"), later, later))
	replaceFile(t, filepath.Join(dir, "sub", "a.tf"), []byte("content of sub/a.tf\n"), 0o644)

	_, changes, err := Check(dir, rec)
	require.NoError(t, err)
	require.True(t, changes.Stale())
	require.False(t, changes.Damaged())
	require.Equal(t, "main.tf changed since it was installed; sub/a.tf changed since it was installed",
		changes.Describe(Words{Tree: "the package", When: "installed"}))

	restamped, changes, err := Verify(dir, rec)
	require.NoError(t, err)
	require.True(t, changes.Stale(), "the content is as recorded")
	require.Len(t, restamped, len(rec))
	for i := range rec {
		want := rec[i]
		want.Stamp = restamped[i].Stamp
		require.Equal(t, want, restamped[i], "only the stamp of %s is new", rec[i].Path)
	}

	_, changes, err = Check(dir, restamped)
	require.NoError(t, err)
	require.Empty(t, changes, "cheap again")
	require.Empty(t, changes.Describe(Words{}))

	require.NoError(t, os.Chtimes(filepath.Join(dir, "main.tf"), later.Add(time.Hour), later.Add(time.Hour)))
	_, changes, err = Check(dir, restamped)
	require.NoError(t, err)
	require.Equal(t, []string{"stamp main.tf"}, kinds(changes))
}

// TestCompare: what Compare reports for entries that differ in each
// field, one field at a time and together.
func TestCompare(t *testing.T) {
	base := Tree{
		{Path: "a", Mode: 0o644, Size: 1, SHA256: "x", Stamp: Stamp{Ino: 1, Mtime: 1, Ctime: 1}},
		{Path: "d", Mode: fs.ModeDir | 0o755},
		{Path: "l", Mode: fs.ModeSymlink | 0o777, Target: "a"},
	}
	with := func(edit func(Tree)) Tree {
		c := append(Tree(nil), base...)
		edit(c)
		return c
	}
	cases := []struct {
		name string
		now  Tree
		want []string
	}{
		{"same", base, nil},
		{"same, not hashed", with(func(t Tree) { t[0].SHA256 = "" }), nil},
		{"content", with(func(t Tree) { t[0].SHA256 = "y" }), []string{"content a"}},
		{"stamp", with(func(t Tree) { t[0].Stamp.Ctime = 2 }), []string{"stamp a"}},
		{"stamp says less than size", with(func(t Tree) { t[0].Stamp.Ino = 2; t[0].Size = 2 }), []string{"size a"}},
		{"type hides the rest", with(func(t Tree) { t[1] = Entry{Path: "d", Mode: 0o600, Size: 9, SHA256: "z"} }), []string{"type d"}},
		{"order of now does not matter", Tree{base[2], base[0], base[1]}, nil},
		{"sorted by path", Tree{{Path: "0", Mode: 0o644}, base[1], {Path: "b", Mode: 0o644}},
			[]string{"added 0", "missing a", "added b", "missing l"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, kinds(Compare(base, tc.now)))
		})
	}
}

func TestDescribe(t *testing.T) {
	w := Words{Tree: "the package", When: "installed"}
	rec := Entry{Path: "f", Mode: 0o755, Size: 9, SHA256: "old", Target: "t"}
	found := Entry{Path: "f", Mode: 0o644, Size: 4, SHA256: "new", Target: "u"}
	for kind, want := range map[Kind]string{
		Missing:        "f is missing",
		Added:          "f was not part of the package",
		TypeChanged:    "f is a regular file, a directory when installed",
		ModeChanged:    "f has mode -rw-r--r--, -rwxr-xr-x when installed",
		SizeChanged:    "f has 4 bytes, 9 when installed",
		TargetChanged:  `f points to "u", "t" when installed`,
		ContentChanged: "f has SHA-256 new, old when installed",
		StampChanged:   "f changed since it was installed",
	} {
		r := rec
		if kind == TypeChanged {
			r.Mode = fs.ModeDir | 0o755
		}
		require.Equal(t, want, Change{Kind: kind, Path: "f", Recorded: r, Found: found}.Describe(w))
	}
	require.Equal(t, "f was not part of the recorded tree", Change{Kind: Added, Path: "f"}.String())
	require.Equal(t, "Kind(99)", Kind(99).String())

	mixed := Changes{{Kind: StampChanged, Path: "a"}, {Kind: Missing, Path: "b"}}
	require.True(t, mixed.Damaged())
	require.False(t, mixed.Stale())
	require.Equal(t, "b is missing", mixed.String(), "stamps are left out when something else differs")
	var many Changes
	for _, p := range strings.Split("abcdef", "") {
		many = append(many, Change{Kind: Missing, Path: p})
	}
	require.Equal(t, "a is missing; b is missing; c is missing; and 3 more", many.String())
	require.False(t, Changes(nil).Damaged())
	require.False(t, Changes(nil).Stale())
}
