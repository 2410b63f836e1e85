package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/tfisolate/tfisolate/internal/journal"
	"github.com/tfisolate/tfisolate/internal/lockinfo"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/workdir"
)

// lockHolder reads who holds the lock from terraform's lock error (see
// lockinfo.Holder). An info block that may be this attempt's own, and
// was created by this user on this host after the attempt began, is not
// taken for the holder's.
func lockHolder(msg string, attempt time.Time) *StateLock {
	h, sure := lockinfo.Holder(msg)
	l := stateLock(h)
	if sure {
		return l
	}
	if l != nil {
		who, _ := journal.Who()
		if l.Who == who && !l.Created.Before(attempt) {
			return nil // our own attempt's info
		}
	}
	return l
}

// lockBackoff bounds each attempt's -lock-timeout after the first.
const (
	lockFirstStep = 500 * time.Millisecond
	lockMaxStep   = 8 * time.Second
)

// stateLock is l as runner's public StateLock; nil for nil.
func stateLock(l *lockinfo.Lock) *StateLock {
	if l == nil {
		return nil
	}
	s := StateLock(*l) // the same fields: a new one in either fails to compile here
	return &s
}

// withStateLock runs fn until it does not fail on a state lock or the
// lock timeout is spent. fn gets the -lock-timeout for its attempt.
//
// The first attempt uses -lock-timeout=0s, so a held lock shows up at once
// with its holder; later attempts let terraform itself wait for a growing
// step (that is the backoff). Each wait is one line in the unit's log
// (who holds the lock, for how long it has been waited for), never
// terraform's whole lock error. LockWait counts from the first lock error
// to the start of the attempt that got through.
func (x *unitRun) withStateLock(ctx context.Context, what string, fn func(lockTimeout string) error) error {
	var waitedFrom time.Time // start of the first attempt that met a lock
	step := time.Duration(0)
	for {
		start := time.Now()
		err := fn(fmt.Sprintf("%dms", step.Milliseconds()))
		if err == nil || ctx.Err() != nil || !lockinfo.IsLocked(err) {
			if !waitedFrom.IsZero() {
				x.rec.stateWait += start.Sub(waitedFrom)
				x.waitEvent(Wait{Lock: WaitStateLock, State: x.rec.stateLock, Waited: start.Sub(waitedFrom), Done: true})
				x.out.note(fmt.Sprintf("%s: state lock acquired after waiting %s", what, start.Sub(waitedFrom).Round(time.Millisecond)))
			}
			return err
		}
		if waitedFrom.IsZero() {
			waitedFrom = start
		}
		// A later attempt may catch the lock between holders, when
		// terraform cannot read who holds it; keep the last known holder.
		h := lockHolder(err.Error(), start)
		if h != nil {
			x.rec.stateLock = h
		}
		if x.rs.cfg.recoverLocks && h != nil && x.recoverLock(ctx, h) {
			continue // unlocked a lock this SDK's crashed run left: try again at once
		}
		waited := time.Since(waitedFrom)
		remaining := x.rs.cfg.lockTimeout - waited
		if remaining <= 0 {
			x.rec.stateWait += waited
			x.waitEvent(Wait{Lock: WaitStateLock, State: x.rec.stateLock, Waited: waited, Done: true})
			return fmt.Errorf("%s: %w", what, x.staleLockError(waited, err))
		}
		by := "by " + x.rec.stateLock.String()
		if x.rec.stateLock == nil {
			by = "(the engine named no holder)"
		}
		x.out.note(fmt.Sprintf("%s: state locked %s; waited %s, up to %s more", what, by, waited.Round(time.Second), remaining.Round(time.Second)))
		if step == 0 {
			step = lockFirstStep
		} else {
			step = min(2*step, lockMaxStep)
		}
		step = min(step, remaining)
		x.waitEvent(Wait{Lock: WaitStateLock, State: x.rec.stateLock, Waited: waited, Next: step})
	}
}

// waitEvent tells the Run's events that the unit waits, or waited, for
// a lock someone else holds.
func (x *unitRun) waitEvent(w Wait) {
	x.rs.em.emit(Event{Unit: x.id, Phase: PhaseWait, Status: Running, Wait: &w})
}

// instanceWait is workdir's report of a wait for the instance lock.
func (x *unitRun) instanceWait(w workdir.LockWait) {
	x.waitEvent(Wait{Lock: WaitInstanceLock, Instance: w.Holder, Waited: w.Waited, Done: w.Done})
}

// staleLockError says who holds the lock, since when, and exactly how to
// release it if that holder is gone. The shell command is a line of its
// own, so that it can be copied whole; what terraform said is on the
// line after it.
func (x *unitRun) staleLockError(waited time.Duration, cause error) error {
	l := x.rec.stateLock
	if l == nil {
		return fmt.Errorf("%w by a holder the backend does not name; gave up after %s: %s", ErrStateLocked, waited.Round(time.Second), lockinfo.Marker)
	}
	holder, stale := fmt.Sprintf("lock %s (the backend does not say who holds it or since when)", l.ID), "is stale"
	if !l.Created.IsZero() {
		holder, stale = fmt.Sprintf("%s (%s ago)", l, time.Since(l.Created).Round(time.Second)), "may be stale"
	}
	return fmt.Errorf("%w by %s; gave up after %s: %s.\nIf that run is gone the lock %s: release it with runner.ForceUnlock(ctx, unit, %q), or run:\n\n    %s",
		ErrStateLocked, holder, waited.Round(time.Second), lockinfo.Marker, stale, l.ID, lockinfo.ForceUnlockCommand(x.dir, x.w.DataDir, x.rs.eng.Path, l.ID))
}

// recoverLock force-unlocks l when the instance's journal proves that one
// of this SDK's own runs of this instance left it: that run never
// finished (its process is gone: this run holds the instance lock), and
// l was taken by the same user on the same host while that run was under
// way. It reports whether the lock was released.
func (x *unitRun) recoverLock(ctx context.Context, l *StateLock) bool {
	c := journal.LeftBy(journalLock(l), x.crashed)
	if c == nil || x.unlocked[l.ID] {
		return false
	}
	if x.unlocked == nil {
		x.unlocked = map[string]bool{}
	}
	x.unlocked[l.ID] = true
	x.out.note(fmt.Sprintf("state lock %s was left by this instance's run of pid %d (%s, started %s), which never finished; releasing it",
		l.ID, c.PID, c.Command, c.Started.UTC().Format(time.RFC3339)))
	if _, err := x.tf.Run(ctx, tfcmd.ForceUnlock(l.ID)); err != nil {
		x.out.note("could not release it: " + firstLine(err))
		return false
	}
	x.rec.recovered = append(x.rec.recovered, *l)
	return true
}
