//go:build unix

package testbackend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func allResources() []string {
	return []string{"terraform_data.seed", "terraform_data.a", "terraform_data.b"}
}

func TestHTTPStateTerraform(t *testing.T) {
	s := StartHTTPState(t)

	t.Run("ApplyWritesStateAndReleasesTheLock", func(t *testing.T) {
		t.Parallel()
		w := newTFWorld(t)
		d := w.dir(s.BackendJSON("apply"))
		w.mustRun(d, nil, "init", "-input=false")
		w.mustRun(d, nil, "apply", "-auto-approve", "-input=false")

		st, ok := s.State("apply")
		require.True(t, ok)
		require.ElementsMatch(t, allResources(), stateResources(t, st))
		_, held := s.Lock("apply")
		require.False(t, held)
		c := s.Counters("apply")
		require.Positive(t, c.Locks)
		require.Equal(t, c.Locks, c.Unlocks, "every lock was released")
		require.Zero(t, c.LockConflicts+c.UnlockConflicts+c.WriteConflicts+c.ForcedUnlocks)
	})

	t.Run("KilledHolderLeavesItsLockUntilForceUnlock", func(t *testing.T) {
		t.Parallel()
		const name = "killed"
		w := newTFWorld(t)
		a, b := w.dir(s.BackendJSON(name)), w.dir(s.BackendJSON(name))
		w.mustRun(a, nil, "init", "-input=false")
		w.mustRun(b, nil, "init", "-input=false")

		g := newGate(t)
		pa := w.start(a, nil, "apply", "-auto-approve", "-input=false", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa)
		held, ok := s.Lock(name)
		require.True(t, ok, "A holds the lock inside apply")
		require.Equal(t, "OperationTypeApply", held.Operation)
		require.NotEmpty(t, held.ID)
		pa.kill(t)

		after, ok := s.Lock(name)
		require.True(t, ok, "the lock outlives the killed terraform")
		require.Equal(t, held, after)

		out, err := w.run(b, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
		require.Error(t, err, out)
		require.Contains(t, flat(out), "Error acquiring the state lock")
		require.Contains(t, flat(out), "HTTP remote state already locked: ID="+held.ID, "the message names the holder's lock")
		require.Equal(t, 1, s.Counters(name).LockConflicts)

		out = w.mustRun(b, nil, "force-unlock", "-force", held.ID)
		require.Contains(t, flat(out), "successfully unlocked")
		_, ok = s.Lock(name)
		require.False(t, ok)
		require.Equal(t, 1, s.Counters(name).ForcedUnlocks)

		w.mustRun(b, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
		st, ok := s.State(name)
		require.True(t, ok)
		require.ElementsMatch(t, allResources(), stateResources(t, st))
	})

	t.Run("PlantedLockNamesItsHolder", func(t *testing.T) {
		t.Parallel()
		const name = "planted"
		w := newTFWorld(t)
		d := w.dir(s.BackendJSON(name))
		w.mustRun(d, nil, "init", "-input=false")
		s.SetLock(name, LockInfo{ID: "planted-lock-1", Operation: "OperationTypeApply", Who: "ci@runner-7",
			Version: "1.11.4", Created: time.Now().UTC()})

		out, err := w.run(d, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
		require.Error(t, err, out)
		require.Contains(t, flat(out), "Error acquiring the state lock")
		require.Contains(t, flat(out), "ID=planted-lock-1")
		_, ok := s.State(name)
		require.False(t, ok, "nothing was written without the lock")
	})

	t.Run("SecondApplyWaitsForTheLock", func(t *testing.T) {
		t.Parallel()
		const name = "wait"
		w := newTFWorld(t)
		a, b := w.dir(s.BackendJSON(name)), w.dir(s.BackendJSON(name))
		w.mustRun(a, nil, "init", "-input=false")
		w.mustRun(b, nil, "init", "-input=false")
		w.mustRun(a, nil, "apply", "-auto-approve", "-input=false", "-target=terraform_data.seed")

		g := newGate(t)
		pa := w.start(a, nil, "apply", "-auto-approve", "-input=false", "-target=terraform_data.a", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa)
		pb := w.start(b, nil, "apply", "-auto-approve", "-input=false", "-target=terraform_data.b", "-lock-timeout=90s")
		// The server answered B's LOCK with 423 while A held the lock.
		require.NoError(t, s.Wait(w.ctx, func() bool { return s.Counters(name).LockConflicts >= 1 }))
		g.release(t)

		outA, errA := pa.wait()
		require.NoError(t, errA, outA)
		outB, errB := pb.wait()
		require.NoError(t, errB, outB)
		st, ok := s.State(name)
		require.True(t, ok)
		require.ElementsMatch(t, allResources(), stateResources(t, st), "B read A's state after taking the lock")
		c := s.Counters(name)
		require.Zero(t, c.WriteConflicts)
		require.Equal(t, c.Locks-c.LockConflicts, c.Unlocks, "every granted lock was released")
	})
}
