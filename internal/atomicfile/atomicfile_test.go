package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	require.NoError(t, atomicfile.WriteFile(p, []byte("new"), 0o600))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "temp file left behind")
}

func TestCleanupWithoutReplaceKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	f, err := atomicfile.New(p, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("half")
	require.NoError(t, err)
	require.NoError(t, f.Cleanup())
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.NoError(t, f.Cleanup(), "second cleanup is a no-op")
}

func TestWriteFileIfChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	changed, err := atomicfile.WriteFileIfChanged(p, []byte("a"), 0o644)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = atomicfile.WriteFileIfChanged(p, []byte("a"), 0o644)
	require.NoError(t, err)
	require.False(t, changed)
	changed, err = atomicfile.WriteFileIfChanged(p, []byte("b"), 0o644)
	require.NoError(t, err)
	require.True(t, changed)
}

func TestNewInMissingDirFails(t *testing.T) {
	_, err := atomicfile.New(filepath.Join(t.TempDir(), "nope", "f"), 0o644)
	require.Error(t, err)
}

func TestNoSyncStillReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, atomicfile.WriteFile(p, []byte("one"), 0o644, atomicfile.NoSync()))
	require.NoError(t, atomicfile.WriteFile(p, []byte("two"), 0o644, atomicfile.NoSync()))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "two", string(b))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
}

// TestNarrow: a record or dir an older release left wider loses the
// bits the mode asked for does not grant, and gains none; a link is
// never followed; a missing path is fine. ReadFile narrows what it reads.
func TestNarrow(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.json")
	require.NoError(t, os.WriteFile(rec, []byte("{}"), 0o644))
	require.NoError(t, os.Chmod(rec, 0o644))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.Chmod(sub, 0o755))
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, nil, 0o644))
	require.NoError(t, os.Chmod(target, 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	readOnly := filepath.Join(dir, "ro")
	require.NoError(t, os.WriteFile(readOnly, nil, 0o400))

	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	require.NoError(t, atomicfile.Narrow(rec, atomicfile.Record))
	require.Equal(t, os.FileMode(0o600), mode(rec))
	require.NoError(t, atomicfile.Narrow(sub, atomicfile.RecordDir))
	require.Equal(t, os.FileMode(0o700), mode(sub))
	require.NoError(t, atomicfile.Narrow(link, atomicfile.Record))
	require.Equal(t, os.FileMode(0o644), mode(target), "a link's target is not narrowed")
	require.NoError(t, atomicfile.Narrow(readOnly, atomicfile.Record))
	require.Equal(t, os.FileMode(0o400), mode(readOnly), "no bit added")
	require.NoError(t, atomicfile.Narrow(filepath.Join(dir, "none"), atomicfile.Record))

	require.NoError(t, os.Chmod(rec, 0o644))
	b, err := atomicfile.ReadFile(rec, atomicfile.Record)
	require.NoError(t, err)
	require.Equal(t, "{}", string(b))
	require.Equal(t, os.FileMode(0o600), mode(rec), "narrowed as it is read")
	_, err = atomicfile.ReadFile(link, atomicfile.Record)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), mode(target), "read through a link: its target is not narrowed")
	_, err = atomicfile.ReadFile(filepath.Join(dir, "none"), atomicfile.Record)
	require.ErrorIs(t, err, os.ErrNotExist)

	deep := filepath.Join(dir, "a", "b")
	require.NoError(t, atomicfile.MkdirPrivate(deep))
	require.Equal(t, os.FileMode(0o700), mode(deep))
	require.Equal(t, os.FileMode(0o700), mode(filepath.Join(dir, "a")))
	require.NoError(t, os.Chmod(deep, 0o755))
	require.NoError(t, atomicfile.MkdirPrivate(deep))
	require.Equal(t, os.FileMode(0o700), mode(deep), "an existing dir is narrowed")
}
