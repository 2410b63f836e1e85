package treesum

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTree writes the tree the tests record: a file at the top, a
// directory with a file, an executable, an empty directory and a symlink.
func writeTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"sub", "sub/empty"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	for name, mode := range map[string]os.FileMode{"main.tf": 0o644, "sub/a.tf": 0o644, "sub/run.sh": 0o755} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("content of "+name+"\n"), mode))
		require.NoError(t, os.Chmod(p, mode)) // whatever the umask
	}
	require.NoError(t, os.Symlink("a.tf", filepath.Join(dir, "sub", "link.tf")))
	return dir
}

func paths(t Tree) []string {
	var out []string
	for _, e := range t {
		out = append(out, e.Path)
	}
	return out
}

func TestRecordListsTheTree(t *testing.T) {
	dir := writeTree(t)
	rec, err := Record(dir)
	require.NoError(t, err)
	require.NoError(t, rec.Validate())
	require.Equal(t, []string{"main.tf", "sub", "sub/a.tf", "sub/empty", "sub/link.tf", "sub/run.sh"}, paths(rec))
	sum, err := HashFile(filepath.Join(dir, "main.tf"))
	require.NoError(t, err)
	for _, e := range rec {
		switch e.Path {
		case "main.tf":
			require.True(t, e.Mode.IsRegular())
			require.Equal(t, os.FileMode(0o644), e.Mode)
			require.Equal(t, int64(len("content of main.tf\n")), e.Size)
			require.Equal(t, sum, e.SHA256)
			require.NotZero(t, e.Stamp.Mtime)
		case "sub/run.sh":
			require.Equal(t, os.FileMode(0o755), e.Mode)
		case "sub", "sub/empty":
			require.True(t, e.Mode.IsDir())
			require.Zero(t, e.Size)
			require.Empty(t, e.SHA256)
			require.Zero(t, e.Stamp, "directories have no stamp")
		case "sub/link.tf":
			require.Equal(t, fs.ModeSymlink, e.Mode.Type())
			require.Equal(t, "a.tf", e.Target)
			require.Empty(t, e.SHA256, "a link is not followed")
			require.Zero(t, e.Stamp)
		}
	}

	cheap, err := Scan(dir)
	require.NoError(t, err)
	require.Equal(t, paths(rec), paths(cheap))
	for i, e := range cheap {
		require.Empty(t, e.SHA256, "Scan read %s", e.Path)
		e.SHA256 = rec[i].SHA256
		require.Equal(t, rec[i], e, "Scan and Record see the same file")
	}
}

// TestRecordSortsByWholePath: a Tree is sorted by path, not in the order
// a directory walk visits it.
func TestRecordSortsByWholePath(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a"), 0o755))
	for _, f := range []string{"a/b", "a.txt", "a-z"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	rec, err := Record(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "a-z", "a.txt", "a/b"}, paths(rec))
	require.NoError(t, rec.Validate())
}

// TestSymlinkLoops: links are recorded, never followed, so a link to
// itself, to its parent, to a directory of the tree or in a loop with
// another is recorded once, as a link, and checks as unchanged.
func TestSymlinkLoops(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644))
	links := map[string]string{"self": "self", "a": "b", "b": "a", "sub/up": "..", "root": ".", "dirlink": "sub", "dangling": "nowhere"}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	rec, err := Record(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "dangling", "dirlink", "root", "self", "sub", "sub/f", "sub/up"}, paths(rec))
	for _, e := range rec {
		if want, ok := links[e.Path]; ok {
			require.Equal(t, fs.ModeSymlink, e.Mode.Type(), e.Path)
			require.Equal(t, want, e.Target, e.Path)
		}
	}
	_, changes, err := Check(dir, rec)
	require.NoError(t, err)
	require.Empty(t, changes)
	_, changes, err = Verify(dir, rec)
	require.NoError(t, err)
	require.Empty(t, changes)
}

func TestRecordRefusesRoots(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(t.TempDir(), link))
	missing := filepath.Join(dir, "missing")
	for _, list := range []func(string) (Tree, error){Record, Scan} {
		_, err := list(missing)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.ErrorContains(t, err, missing)
		_, err = list(file)
		require.ErrorIs(t, err, ErrNotDir)
		require.ErrorContains(t, err, file+": it is a regular file")
		_, err = list(link)
		require.ErrorIs(t, err, ErrNotDir, "a link to a directory is not followed")
		require.ErrorContains(t, err, link+": it is a symlink")
	}
	_, _, err := Check(file, nil)
	require.ErrorIs(t, err, ErrNotDir)
	_, _, err = Verify(missing, nil)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestRecordRefusesUnreadableFiles: a file that cannot be read cannot be
// hashed: Record names it; Scan, which reads no file, lists it.
func TestRecordRefusesUnreadableFiles(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a file mode that keeps this user from reading")
	}
	dir := writeTree(t)
	secret := filepath.Join(dir, "sub", "secret")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o000))
	_, err := Record(dir)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorContains(t, err, "sub/secret: open ")
	require.ErrorContains(t, err, dir)
	cheap, err := Scan(dir)
	require.NoError(t, err)
	require.Contains(t, paths(cheap), "sub/secret")
}

func TestValidate(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	file := func(p string) Entry { return Entry{Path: p, Mode: 0o644, Size: 1, SHA256: sum} }
	dir := func(p string) Entry { return Entry{Path: p, Mode: fs.ModeDir | 0o755} }
	cases := []struct {
		name string
		tree Tree
		want string // "" when valid
	}{
		{"empty", nil, ""},
		{"ok", Tree{file("a"), dir("d"), file("d/f"), {Path: "l", Mode: fs.ModeSymlink | 0o777, Target: "a"}}, ""},
		{"unsorted", Tree{file("b"), file("a")}, "paths are not sorted and unique at a"},
		{"duplicate", Tree{dir("a"), dir("a")}, "paths are not sorted and unique at a"},
		{"parent", Tree{file("../a")}, `path "../a" is not`},
		{"absolute", Tree{file("/a")}, `path "/a" is not`},
		{"empty element", Tree{file("a//b")}, `path "a//b" is not`},
		{"dot", Tree{dir(".")}, `path "." is not`},
		{"empty path", Tree{file("")}, `path "" is not`},
		{"file without hash", Tree{{Path: "a", Mode: 0o644}}, "a has no SHA-256"},
		{"hash not hex", Tree{{Path: "a", Mode: 0o644, SHA256: strings.Repeat("AB", 32)}}, "a has no SHA-256"},
		{"link without target", Tree{{Path: "l", Mode: fs.ModeSymlink | 0o777}}, "l is a symlink without a target"},
		{"fifo", Tree{{Path: "p", Mode: fs.ModeNamedPipe | 0o644}}, "p is a named pipe"},
		{"negative size", Tree{{Path: "a", Mode: 0o644, Size: -1, SHA256: sum}}, "a has a negative size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tree.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBadRecord)
			require.ErrorContains(t, err, tc.want)
			_, _, err = Check(t.TempDir(), tc.tree)
			require.ErrorIs(t, err, ErrBadRecord, "Check refuses the record too")
		})
	}
}

// TestJSON: the field names are the ones pluginc's install records and
// modstore's manifests were written with before this package, and both
// read back as they were.
func TestJSON(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	tree := Tree{
		{Path: "empty", Mode: 0o644, SHA256: sum, Stamp: Stamp{Ino: 7, Mtime: 8, Ctime: 9}},
		{Path: "f", Mode: 0o755, Size: 3, SHA256: sum, Stamp: Stamp{Ino: 1, Mtime: 2, Ctime: 3}},
		{Path: "l", Mode: fs.ModeSymlink | 0o777, Target: "f"},
		{Path: "sub", Mode: fs.ModeDir | 0o755},
	}
	b, err := json.Marshal(tree)
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"path":"empty","mode":420,"sha256":"`+sum+`","stamp":{"ino":7,"mtime":8,"ctime":9}},
		{"path":"f","mode":493,"size":3,"sha256":"`+sum+`","stamp":{"ino":1,"mtime":2,"ctime":3}},
		{"path":"l","mode":134218239,"target":"f"},
		{"path":"sub","mode":2147484141}
	]`, string(b))
	var back Tree
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, tree, back)

	for name, old := range map[string]string{
		// pluginc's fileRecord: size always written, stamp always written.
		"pluginc": `[{"path":"f","size":3,"mode":493,"sha256":"` + sum + `","stamp":{"ino":1,"mtime":2,"ctime":3}}]`,
		// modstore's record, and a stamp from a platform with mtime only.
		"modstore": `[{"path":"f","mode":493,"size":3,"sha256":"` + sum + `","stamp":{"ino":1,"mtime":2,"ctime":3}}]`,
	} {
		var got Tree
		require.NoError(t, json.Unmarshal([]byte(old), &got), name)
		require.Equal(t, tree[1:2], got, name)
	}
	var mtimeOnly Tree
	require.NoError(t, json.Unmarshal([]byte(`[{"path":"f","mode":420,"size":1,"sha256":"`+sum+`","stamp":{"mtime":5}}]`), &mtimeOnly))
	require.Equal(t, Stamp{Mtime: 5}, mtimeOnly[0].Stamp)

	// A real record round-trips exactly, so a record read back checks as
	// unchanged.
	dir := writeTree(t)
	rec, err := Record(dir)
	require.NoError(t, err)
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	var read Tree
	require.NoError(t, json.Unmarshal(b, &read))
	require.Equal(t, rec, read)
	_, changes, err := Check(dir, read)
	require.NoError(t, err)
	require.Empty(t, changes)
}
