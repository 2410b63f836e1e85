package modstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// TestRecord: an entry's record is its manifest's, the tree as fill
// wrote it (the same digest as a fresh record of the tree); a key with
// no entry, an empty key and an entry stored for another key are errors.
func TestRecord(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	dir, _, err := s.Get(context.Background(), "k", func(_ context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "main.tf"), []byte("x"), 0o644)
	})
	require.NoError(t, err)
	rec, err := s.Record("k")
	require.NoError(t, err)
	now, err := treesum.Record(dir)
	require.NoError(t, err)
	require.Equal(t, now.Digest(), rec.Digest())
	require.Len(t, rec, 1)

	_, err = s.Record("missing")
	require.Error(t, err)
	_, err = s.Record("")
	require.ErrorIs(t, err, ErrInvalidKey)

	// The entry of "k" put where "other"'s would be: never believed.
	require.NoError(t, os.Rename(s.entryPath(hashKey("k")), s.entryPath(hashKey("other"))))
	_, err = s.Record("other")
	require.ErrorIs(t, err, ErrDamagedEntry)
}
