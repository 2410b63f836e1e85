package runner

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

// TestLeftByBoundsTheCrashedRun: a state lock counts as left by a crashed
// run only when it was created by the same user and host within
// lockTakeWindow of the start of the run's last terraform and no later
// than that terraform's last sign of life (a runner that saw it running,
// or the last write to its output files): a lock a live process of the
// same user took after the engine was gone, seconds or half an hour
// later, is never taken for it, nor is any lock of a run that recorded
// no terraform or no sign of life. A lock time written to the second
// stands for its whole second.
func TestLeftByBoundsTheCrashedRun(t *testing.T) {
	who, host := lockWho()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	began := t0.Add(5 * time.Second)
	died := began.Add(10*time.Second + 123456789) // its last sign of life, to the nanosecond
	run := journalRun{PID: 4242, Host: host, Who: who, Command: "apply", Started: t0, Until: t0.Add(time.Hour),
		Engine: &journalEngine{PID: 4300, Began: began, Alive: died}}
	with := func(f func(e *journalEngine)) journalRun {
		r := run
		e := *run.Engine
		f(&e)
		r.Engine = &e
		return r
	}
	// An engine whose host died: its output files, last written when it
	// died, are all there is.
	out := filepath.Join(t.TempDir(), "1234.out")
	require.NoError(t, os.WriteFile(out, []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(strings.TrimSuffix(out, ".out")+".err", nil, 0o600))
	require.NoError(t, os.Chtimes(out, died, died))
	require.NoError(t, os.Chtimes(strings.TrimSuffix(out, ".out")+".err", began, began))
	byOutput := with(func(e *journalEngine) { e.Alive, e.Output = time.Time{}, out })

	lock := func(created time.Time) *StateLock {
		return &StateLock{ID: "lock-1", Who: who, Created: created}
	}
	for _, tc := range []struct {
		name    string
		lock    *StateLock
		crashed journalRun
		want    bool
	}{
		{"taken as its terraform started", lock(began.Add(2*time.Second + 123)), run, true},
		{"taken at its last sign of life", lock(died), run, true},
		{"taken a nanosecond after its last sign of life", lock(died.Add(1)), run, false},
		{"taken by a live process two seconds after it died", lock(died.Add(2*time.Second + 5)), run, false},
		{"taken by a live process after the crash", lock(t0.Add(30 * time.Minute)), run, false},
		{"taken before the run", lock(t0.Add(-time.Minute)), run, false},
		{"another user", &StateLock{ID: "lock-1", Who: "someone@else", Created: began.Add(2 * time.Second)}, run, false},
		{"a run that recorded no terraform", lock(began.Add(2 * time.Second)), func() journalRun { r := run; r.Engine = nil; return r }(), false},
		{"no sign of life", lock(began.Add(2 * time.Second)), with(func(e *journalEngine) { e.Alive = time.Time{} }), false},
		{"a sign of life past lockTakeWindow", lock(began.Add(lockTakeWindow + time.Second)), with(func(e *journalEngine) { e.Alive = began.Add(time.Hour) }), false},
		{"its output written after the lock", lock(began.Add(2*time.Second + 7)), byOutput, true},
		{"its output's last write before the lock", lock(died.Add(time.Second + 9)), byOutput, false},
		// Written to the second, the lock may have been taken up to a
		// second later: within the second of the last sign it is not
		// proven the engine's.
		{"to the second, the second of its death", lock(died.Truncate(time.Second)), with(func(e *journalEngine) { e.Alive = died.Add(500 * time.Millisecond) }), false},
		{"to the second, a second before its death", lock(died.Truncate(time.Second).Add(-time.Second)), with(func(e *journalEngine) { e.Alive = died.Add(500 * time.Millisecond) }), true},
	} {
		got := leftBy(tc.lock, []journalRun{tc.crashed})
		require.Equal(t, tc.want, got != nil, tc.name)
	}
}

// TestLatestCreation: a lock time stands for the end of its last written
// digit.
func TestLatestCreation(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 7, 0, time.UTC)
	for _, tc := range []struct{ in, want time.Time }{
		{t0, t0.Add(time.Second - 1)},
		{t0.Add(120 * time.Millisecond), t0.Add(130*time.Millisecond - 1)},
		{t0.Add(123 * time.Millisecond), t0.Add(124*time.Millisecond - 1)},
		{t0.Add(123456 * time.Microsecond), t0.Add(123457*time.Microsecond - 1)},
		{t0.Add(123456789), t0.Add(123456789)},
	} {
		require.Equal(t, tc.want, latestCreation(tc.in), "%s", tc.in)
	}
}

// TestEndJournalKeepsTheKilledEnginesLastSign: a run whose terraform had
// to be killed stays in the journal with that terraform's last sign of
// life; a sign from before the engine began is another process's and is
// not kept.
func TestEndJournalKeepsTheKilledEnginesLastSign(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	_, err := beginJournal(dir, "apply", t0)
	require.NoError(t, err)
	require.NoError(t, recordEngine(dir, journalEngine{PID: 4300, Began: t0.Add(time.Second)}))
	require.NoError(t, endJournal(dir, nil, true, t0.Add(3*time.Second), t0.Add(5*time.Second)))
	j := readTestJournal(t, dir)
	require.Len(t, j.Crashed, 1)
	require.True(t, t0.Add(3*time.Second).Equal(j.Crashed[0].Engine.Alive))

	_, err = beginJournal(dir, "apply", t0.Add(10*time.Second))
	require.NoError(t, err)
	require.NoError(t, recordEngine(dir, journalEngine{PID: 4400, Began: t0.Add(11 * time.Second)}))
	require.NoError(t, endJournal(dir, j.Crashed, true, t0.Add(3*time.Second), t0.Add(12*time.Second)))
	j = readTestJournal(t, dir)
	require.Len(t, j.Crashed, 2)
	require.True(t, j.Crashed[1].Engine.Alive.IsZero(), "a sign from before the engine began was kept")
}

// readTestJournal parses the journal in dir.
func readTestJournal(t *testing.T, dir string) journal {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, journalName))
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
	p := filepath.Join(dir, journalName)
	t0 := time.Now()
	crashed, err := beginJournal(dir, "apply", t0)
	require.NoError(t, err)
	require.Empty(t, crashed)
	first, err := os.Stat(p)
	require.NoError(t, err)
	require.GreaterOrEqual(t, first.Size(), int64(journalMinSize))

	require.NoError(t, recordEngine(dir, journalEngine{PID: 4300, Output: "x.out", Began: t0}))
	j := readTestJournal(t, dir)
	require.NotNil(t, j.Current)
	require.Equal(t, "apply", j.Current.Command)
	require.Equal(t, 4300, j.Current.Engine.PID)
	require.NoError(t, endJournal(dir, crashed, false, time.Time{}, t0.Add(time.Second)))
	j = readTestJournal(t, dir)
	require.Nil(t, j.Current)
	require.Empty(t, j.Crashed)

	crashed, err = beginJournal(dir, "plan", t0.Add(2*time.Second))
	require.NoError(t, err)
	require.Empty(t, crashed, "a finished run is not taken for a crashed one")
	require.Equal(t, "plan", readTestJournal(t, dir).Current.Command)
	now, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(first, now), "the journal was replaced, not rewritten in place")
	require.Equal(t, first.Size(), now.Size())

	// A run that never ended is found by the next, which rewrites the
	// same file.
	crashed, err = beginJournal(dir, "apply", t0.Add(3*time.Second))
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
	require.NoError(t, os.Symlink(target, filepath.Join(dir, journalName)))

	_, err := beginJournal(dir, "apply", time.Now())
	require.NoError(t, err)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, body, string(b), "written through the link")
	fi, err := os.Lstat(filepath.Join(dir, journalName))
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
	p := filepath.Join(dir, journalName)
	long := journal{Current: &journalRun{Command: strings.Repeat("c", 2*inplace.Page)}}
	require.NoError(t, writeJournal(p, long, false))
	before, err := os.Stat(p)
	require.NoError(t, err)
	require.Greater(t, before.Size(), int64(inplace.Page))
	require.Equal(t, long.Current.Command, readTestJournal(t, dir).Current.Command)

	require.NoError(t, writeJournal(p, journal{Current: &journalRun{Command: "apply"}}, false))
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "a journal larger than a page was rewritten in place")
	require.Equal(t, "apply", readTestJournal(t, dir).Current.Command)
	require.NoError(t, writeJournal(p, journal{Current: &journalRun{Command: "plan"}}, false))
	again, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(after, again))
}
