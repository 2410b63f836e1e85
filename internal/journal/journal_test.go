package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/inplace"
)

// TestEndKeepsTheKilledEnginesLastSign: a run whose terraform had
// to be killed stays in the journal with that terraform's last sign of
// life; a sign from before the engine began is another process's and is
// not kept.
func TestEndKeepsTheKilledEnginesLastSign(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	_, err := Begin(dir, "apply", t0)
	require.NoError(t, err)
	require.NoError(t, RecordEngine(dir, Engine{PID: 4300, Began: t0.Add(time.Second)}))
	require.NoError(t, End(dir, nil, true, t0.Add(3*time.Second), t0.Add(5*time.Second)))
	j := readTestJournal(t, dir)
	require.Len(t, j.Crashed, 1)
	require.True(t, t0.Add(3*time.Second).Equal(j.Crashed[0].Engine.Alive))

	_, err = Begin(dir, "apply", t0.Add(10*time.Second))
	require.NoError(t, err)
	require.NoError(t, RecordEngine(dir, Engine{PID: 4400, Began: t0.Add(11 * time.Second)}))
	require.NoError(t, End(dir, j.Crashed, true, t0.Add(3*time.Second), t0.Add(12*time.Second)))
	j = readTestJournal(t, dir)
	require.Len(t, j.Crashed, 2)
	require.True(t, j.Crashed[1].Engine.Alive.IsZero(), "a sign from before the engine began was kept")
}

// readTestJournal parses the journal in dir.
func readTestJournal(t *testing.T, dir string) journal {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	var j journal
	require.NoError(t, json.Unmarshal(b, &j), "the journal parses: %q", b)
	return j
}

// TestJournalRewrittenInPlace: a unit's journal writes after the first
// are made in the same file (no create, no rename), padded to its size,
// and each leaves a journal that parses to what was written; a finished
// run leaves it with no run under way instead of removing it, and the
// next run finds nothing crashed.
func TestJournalRewrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	t0 := time.Now()
	crashed, err := Begin(dir, "apply", t0)
	require.NoError(t, err)
	require.Empty(t, crashed)
	first, err := os.Stat(p)
	require.NoError(t, err)
	require.GreaterOrEqual(t, first.Size(), int64(minSize))

	require.NoError(t, RecordEngine(dir, Engine{PID: 4300, Output: "x.out", Began: t0}))
	j := readTestJournal(t, dir)
	require.NotNil(t, j.Current)
	require.Equal(t, "apply", j.Current.Command)
	require.Equal(t, 4300, j.Current.Engine.PID)
	require.NoError(t, End(dir, crashed, false, time.Time{}, t0.Add(time.Second)))
	j = readTestJournal(t, dir)
	require.Nil(t, j.Current)
	require.Empty(t, j.Crashed)

	crashed, err = Begin(dir, "plan", t0.Add(2*time.Second))
	require.NoError(t, err)
	require.Empty(t, crashed, "a finished run is not taken for a crashed one")
	require.Equal(t, "plan", readTestJournal(t, dir).Current.Command)
	now, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(first, now), "the journal was replaced, not rewritten in place")
	require.Equal(t, first.Size(), now.Size())

	// A run that never ended is found by the next, which rewrites the
	// same file.
	crashed, err = Begin(dir, "apply", t0.Add(3*time.Second))
	require.NoError(t, err)
	require.Len(t, crashed, 1)
	require.Equal(t, "plan", crashed[0].Command)
	now, err = os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(first, now))
}

// TestJournalNeverWrittenThroughALink: a link at the journal's place is
// replaced by a journal of the runner's own; the file it points at is
// left as it was.
func TestJournalNeverWrittenThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	body := "{}" + strings.Repeat(" ", 2000)
	require.NoError(t, os.WriteFile(target, []byte(body), 0o644))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))

	_, err := Begin(dir, "apply", time.Now())
	require.NoError(t, err)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, body, string(b), "written through the link")
	fi, err := os.Lstat(filepath.Join(dir, name))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	require.Equal(t, "apply", readTestJournal(t, dir).Current.Command)
}

// TestJournalBeyondAPageReplaced: a record that would not fit in one page
// is never written in place (a killed writer could tear it); it replaces
// the journal whole, and shorter records later are written in place
// again once they fit.
func TestJournalBeyondAPageReplaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	long := journal{Current: &Run{Command: strings.Repeat("c", 2*inplace.Page)}}
	require.NoError(t, write(p, long, false))
	before, err := os.Stat(p)
	require.NoError(t, err)
	require.Greater(t, before.Size(), int64(inplace.Page))
	require.Equal(t, long.Current.Command, readTestJournal(t, dir).Current.Command)

	require.NoError(t, write(p, journal{Current: &Run{Command: "apply"}}, false))
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "a journal larger than a page was rewritten in place")
	require.Equal(t, "apply", readTestJournal(t, dir).Current.Command)
	require.NoError(t, write(p, journal{Current: &Run{Command: "plan"}}, false))
	again, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(after, again))
}

// TestSweepOutputsKeepsWhatCrashedRunsName: the engine output files a
// crashed run names (stdout and its .err) stay; every other file in the
// dir goes.
func TestSweepOutputsKeepsWhatCrashedRunsName(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"1.out", "1.err", "2.out", "2.err", "3.out"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	crashed := []Run{
		{Command: "apply", Engine: &Engine{PID: 1, Output: filepath.Join(dir, "1.out")}},
		{Command: "plan"},                          // no terraform recorded
		{Command: "plan", Engine: &Engine{PID: 3}}, // no output recorded
	}
	SweepOutputs(dir, crashed)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	require.Equal(t, []string{"1.err", "1.out"}, left)
}
