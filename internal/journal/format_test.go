package journal

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/format"
)

// TestGoldenJournals: the journals earlier releases wrote
// (internal/format/testdata) are read by this release: 12ea26b's of a
// run that crashed with its engine recorded and of the next run under
// way gives both as crashed runs, the engine's PID and output kept; a
// clean run's journal, of 12ea26b and of 9ece32c, none. The journal
// Begin writes then names this release's version.
func TestGoldenJournals(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../format/testdata/12ea26b/journal-crashed.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	crashed, err := Begin(dir, "plan", time.Date(2026, 11, 27, 17, 2, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Len(t, crashed, 2)
	require.NotNil(t, crashed[0].Engine)
	require.Equal(t, 4242, crashed[0].Engine.PID)
	require.Equal(t, uint64(99), crashed[0].Engine.Start)
	require.Equal(t, "apply", crashed[1].Command)
	require.False(t, crashed[1].Until.IsZero(), "the run found under way is crashed since this one began")
	j, err := read(filepath.Join(dir, name))
	require.NoError(t, err)
	require.Equal(t, version, j.Version)

	for _, c := range []string{"12ea26b", "9ece32c"} {
		paths, err := filepath.Glob("../format/testdata/" + c + "/root/*/.tfisolate/data/" + name)
		require.NoError(t, err)
		require.NotEmpty(t, paths)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
			crashed, err := Begin(dir, "apply", time.Now())
			require.NoError(t, err, p)
			require.Empty(t, crashed, p)
		}
	}
}

// TestNewerJournalRefusedByName: a journal of a newer release (its
// version above this one's, fields this release does not know) is
// refused by name, and left byte for byte as it was: what it proves
// about a crashed run this release cannot tell, and rewriting it would
// lose it.
func TestNewerJournalRefusedByName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	newer := `{"version":3,"current":{"pid":1,"host":"h","who":"u@h","command":"apply","started":"2026-12-01T00:00:00Z","lease":{"until":1}}}`
	require.NoError(t, os.WriteFile(p, []byte(newer+"      \n"), 0o644))
	_, err := Begin(dir, "apply", time.Now())
	require.ErrorIs(t, err, format.ErrNewer)
	require.EqualError(t, err, p+": written by a newer release: format 3; this release reads up to 2; upgrade this job")
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, newer+"      \n", string(got))
}
