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
