package inplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRewriteInPlace: a record is written over the same file, which a
// record an older release left 0644 is narrowed to the mode asked for.
func TestRewriteInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec.json")
	require.NoError(t, os.WriteFile(p, Pad([]byte(`{"a":1}`), 64), 0o644))
	require.NoError(t, os.Chmod(p, 0o644))
	before, err := os.Stat(p)
	require.NoError(t, err)
	for _, sync := range []bool{false, true} {
		ok, err := Rewrite(p, []byte(`{"b":22}`), 0o600, sync)
		require.NoError(t, err)
		require.True(t, ok)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, `{"b":22}`+"\n"+strings.Repeat(" ", 64-9), string(b))
		after, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, os.SameFile(before, after), "the file was replaced, not rewritten")
		require.Equal(t, os.FileMode(0o600), after.Mode().Perm(), "narrowed to the mode asked for")
	}
}

// TestRewriteRefuses: Rewrite writes nothing where it could not keep its
// guarantees, and says so.
func TestRewriteRefuses(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("{}      "), 0o644))
	large := filepath.Join(dir, "large")
	require.NoError(t, os.WriteFile(large, Pad(nil, Page+1), 0o644))
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, Pad(nil, 64), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	for _, tc := range []struct{ name, path string }{
		{"missing", filepath.Join(dir, "none")},
		{"no room for the record and its newline", small},
		{"larger than a page", large},
		{"a link", link},
		{"a dir", dir},
	} {
		was, _ := os.ReadFile(tc.path)
		ok, err := Rewrite(tc.path, []byte(`{"record":"longer"}`), 0o600, true)
		require.NoError(t, err, tc.name)
		require.False(t, ok, tc.name)
		now, _ := os.ReadFile(tc.path)
		require.Equal(t, was, now, tc.name)
	}
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, Pad(nil, 64), b, "written through the link")
}

func TestPad(t *testing.T) {
	require.Equal(t, "ab\n  ", string(Pad([]byte("ab"), 5)))
	require.Equal(t, "abc\n", string(Pad([]byte("abc"), 2)), "never shorter than the record and its newline")
}

// TestWriteFile: a missing file is made padded to the size asked, then
// rewritten in place; one that cannot be rewritten (a record longer than
// it holds) is replaced whole.
func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec.json")
	for _, sync := range []bool{false, true} {
		require.NoError(t, os.RemoveAll(p))
		require.NoError(t, WriteFile(p, []byte(`{"a":1}`), 0o600, 32, sync))
		first, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, int64(32), first.Size())
		require.Equal(t, os.FileMode(0o600), first.Mode().Perm())

		require.NoError(t, WriteFile(p, []byte(`{"b":2}`), 0o600, 32, sync))
		now, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, os.SameFile(first, now), "not rewritten in place")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(Pad([]byte(`{"b":2}`), 32)), string(b))

		long := []byte(`{"c":"` + strings.Repeat("x", 40) + `"}`)
		require.NoError(t, WriteFile(p, long, 0o600, 32, sync))
		now, err = os.Stat(p)
		require.NoError(t, err)
		require.False(t, os.SameFile(first, now))
		b, err = os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(long)+"\n", string(b))
	}
}
