package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	who, host := Who()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	began := t0.Add(5 * time.Second)
	died := began.Add(10*time.Second + 123456789) // its last sign of life, to the nanosecond
	run := Run{PID: 4242, Host: host, Who: who, Command: "apply", Started: t0, Until: t0.Add(time.Hour),
		Engine: &Engine{PID: 4300, Began: began, Alive: died}}
	with := func(f func(e *Engine)) Run {
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
	byOutput := with(func(e *Engine) { e.Alive, e.Output = time.Time{}, out })

	lock := func(created time.Time) Lock {
		return Lock{ID: "lock-1", Who: who, Created: created}
	}
	for _, tc := range []struct {
		name    string
		lock    Lock
		crashed Run
		want    bool
	}{
		{"taken as its terraform started", lock(began.Add(2*time.Second + 123)), run, true},
		{"taken at its last sign of life", lock(died), run, true},
		{"taken a nanosecond after its last sign of life", lock(died.Add(1)), run, false},
		{"taken by a live process two seconds after it died", lock(died.Add(2*time.Second + 5)), run, false},
		{"taken by a live process after the crash", lock(t0.Add(30 * time.Minute)), run, false},
		{"taken before the run", lock(t0.Add(-time.Minute)), run, false},
		{"another user", Lock{ID: "lock-1", Who: "someone@else", Created: began.Add(2 * time.Second)}, run, false},
		{"a run that recorded no terraform", lock(began.Add(2 * time.Second)), func() Run { r := run; r.Engine = nil; return r }(), false},
		{"no sign of life", lock(began.Add(2 * time.Second)), with(func(e *Engine) { e.Alive = time.Time{} }), false},
		{"a sign of life past lockTakeWindow", lock(began.Add(lockTakeWindow + time.Second)), with(func(e *Engine) { e.Alive = began.Add(time.Hour) }), false},
		{"its output written after the lock", lock(began.Add(2*time.Second + 7)), byOutput, true},
		{"its output's last write before the lock", lock(died.Add(time.Second + 9)), byOutput, false},
		// Written to the second, the lock may have been taken up to a
		// second later: within the second of the last sign it is not
		// proven the engine's.
		{"to the second, the second of its death", lock(died.Truncate(time.Second)), with(func(e *Engine) { e.Alive = died.Add(500 * time.Millisecond) }), false},
		{"to the second, a second before its death", lock(died.Truncate(time.Second).Add(-time.Second)), with(func(e *Engine) { e.Alive = died.Add(500 * time.Millisecond) }), true},
	} {
		got := LeftBy(tc.lock, []Run{tc.crashed})
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
