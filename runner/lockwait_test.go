package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/journal"
	"github.com/tfisolate/tfisolate/internal/lockinfo"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestStaleLockErrorCommandOnItsOwnLine: the force-unlock command a
// stale state lock's error prints is a line of its own, so it can be
// copied whole; nothing (the cause, the wrapping) follows it on that
// line, whether or not the backend said since when the lock is held.
func TestStaleLockErrorCommandOnItsOwnLine(t *testing.T) {
	for _, created := range []time.Time{{}, time.Now().Add(-time.Minute)} {
		x := &unitRun{rs: &runState{eng: engine.Info{Path: "/opt/bin/terraform"}}, dir: "/w/src/app", w: &workdir.Workdir{DataDir: "/w/data"}}
		x.rec.stateLock = &StateLock{ID: "lock-1", Who: "ci@runner-7", Created: created}
		err := x.staleLockError(5*time.Second, errors.New("terraform plan: exit status 1: Error acquiring the state lock"))
		require.ErrorIs(t, err, ErrStateLocked)
		cmd := lockinfo.ForceUnlockCommand("/w/src/app", "/w/data", "/opt/bin/terraform", "lock-1")
		var found bool
		for _, l := range strings.Split(err.Error(), "\n") {
			if strings.Contains(l, "force-unlock") {
				require.Equal(t, cmd, strings.TrimSpace(l), "the command is alone on its line")
				found = true
			}
		}
		require.True(t, found, "%v", err)
	}
}

// TestNilStateLockString: a holder terraform did not name reads as such,
// not as a holder called "unknown".
func TestNilStateLockString(t *testing.T) {
	var l *StateLock
	require.Equal(t, "the holder is not known (the engine named none)", l.String())
}

// TestLockHolderNotOwnAttempt: the info block of this user's own failed
// attempt (created since the attempt began) is not taken for the
// holder's, unless the backend named the holder by that ID; an older
// lock of the same user, or another user's, is the holder.
func TestLockHolderNotOwnAttempt(t *testing.T) {
	who, _ := journal.Who()
	attempt := time.Now().Truncate(time.Second)
	block := func(id, who string, created time.Time) string {
		return "Error acquiring the state lock\nLock Info:\n  ID:        " + id + "\n  Who:       " + who +
			"\n  Created:   " + created.String() + "\n"
	}
	require.Nil(t, lockHolder(block("mine", who, attempt.Add(time.Second)), attempt), "this attempt's own info")
	require.Equal(t, "older", lockHolder(block("older", who, attempt.Add(-time.Minute)), attempt).ID)
	require.Equal(t, "theirs", lockHolder(block("theirs", "ci@elsewhere", attempt.Add(time.Second)), attempt).ID)
	named := "lock already locked: ID=mine\n" + block("mine", who, attempt.Add(time.Second))
	l := lockHolder(named, attempt)
	require.Equal(t, "mine", l.ID, "named by the backend")
	require.Equal(t, who, l.Who)
	require.True(t, l.Created.Equal(attempt.Add(time.Second)), "%v", l.Created)
}
