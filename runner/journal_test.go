package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
