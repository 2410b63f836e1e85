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
// lockTakeWindow of the start of the run's last terraform; a lock a live
// process of the same user took later (after the crash, before the next
// run found it) is never taken for it, nor is any lock of a run that
// recorded no terraform.
func TestLeftByBoundsTheCrashedRun(t *testing.T) {
	who, host := lockWho()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	run := journalRun{PID: 4242, Host: host, Who: who, Command: "apply", Started: t0, Until: t0.Add(time.Hour),
		Engine: &journalEngine{PID: 4300, Began: t0.Add(5 * time.Second)}}
	lock := func(created time.Time) *StateLock {
		return &StateLock{ID: "lock-1", Who: who, Created: created}
	}
	for _, tc := range []struct {
		name    string
		lock    *StateLock
		crashed journalRun
		want    bool
	}{
		{"taken as its terraform started", lock(t0.Add(7 * time.Second)), run, true},
		{"taken by a live process after the crash", lock(t0.Add(30 * time.Minute)), run, false},
		{"taken before the run", lock(t0.Add(-time.Minute)), run, false},
		{"another user", &StateLock{ID: "lock-1", Who: "someone@else", Created: t0.Add(7 * time.Second)}, run, false},
		{"a run that recorded no terraform", lock(t0.Add(7 * time.Second)), func() journalRun { r := run; r.Engine = nil; return r }(), false},
	} {
		got := leftBy(tc.lock, []journalRun{tc.crashed})
		require.Equal(t, tc.want, got != nil, tc.name)
	}
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
	require.NoError(t, endJournal(dir, crashed, false, t0.Add(time.Second)))
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
