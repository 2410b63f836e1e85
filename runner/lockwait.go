package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/journal"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/workdir"
)

// stateLockMarker is how terraform reports a state lock held by someone
// else, on every backend.
const stateLockMarker = "Error acquiring the state lock"

var (
	lockFieldRe = regexp.MustCompile(`(?m)^\s*(ID|Path|Operation|Who|Version|Created|Info):[ \t]*(.*?)\s*$`)
	// heldIDRe is how backends that print the requester's lock info
	// (http) name the holder: only by ID.
	heldIDRe = regexp.MustCompile(`already locked: ID=(\S+)`)
)

// createdLayout is how terraform prints a lock's creation time (Go's
// time.Time.String).
const createdLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// parseStateLock reads the "Lock Info:" block of terraform's lock error;
// nil when it has none.
func parseStateLock(msg string) *StateLock {
	_, info, ok := strings.Cut(msg, "Lock Info:")
	if !ok {
		return nil
	}
	l := &StateLock{}
	for _, m := range lockFieldRe.FindAllStringSubmatch(info, -1) {
		v := m[2]
		switch m[1] {
		case "ID":
			if l.ID == "" {
				l.ID = v
			}
		case "Path":
			l.Path = v
		case "Operation":
			l.Operation = v
		case "Who":
			l.Who = v
		case "Version":
			l.Version = v
		case "Created":
			if t, err := time.Parse(createdLayout, v); err == nil {
				l.Created = t
			}
		case "Info":
			l.Info = v
		}
	}
	if l.ID == "" {
		return nil
	}
	return l
}

// lockHolder reads who holds the lock from terraform's lock error. Some
// backends print the lock info of the failed attempt itself, not the
// holder's: the http backend names the holder only as "ID=...", and the
// pg backend not at all. An info block that is this attempt's own (its
// ID is not the holder's, or it was created by this user on this host
// after the attempt began) is not taken for the holder's.
func lockHolder(msg string, attempt time.Time) *StateLock {
	l := parseStateLock(msg)
	if m := heldIDRe.FindStringSubmatch(msg); m != nil {
		if l == nil || l.ID != m[1] {
			return &StateLock{ID: m[1]}
		}
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

func isStateLockErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), stateLockMarker)
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
		if err == nil || ctx.Err() != nil || !isStateLockErr(err) {
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
		return fmt.Errorf("%w by a holder the backend does not name; gave up after %s: %s", ErrStateLocked, waited.Round(time.Second), stateLockMarker)
	}
	holder, stale := fmt.Sprintf("lock %s (the backend does not say who holds it or since when)", l.ID), "is stale"
	if !l.Created.IsZero() {
		holder, stale = fmt.Sprintf("%s (%s ago)", l, time.Since(l.Created).Round(time.Second)), "may be stale"
	}
	return fmt.Errorf("%w by %s; gave up after %s: %s.\nIf that run is gone the lock %s: release it with runner.ForceUnlock(ctx, unit, %q), or run:\n\n    %s",
		ErrStateLocked, holder, waited.Round(time.Second), stateLockMarker, stale, l.ID, x.forceUnlockCommand(l.ID))
}

// forceUnlockCommand is the shell command that releases lock id as it is
// printed: in the unit's directory, with its data dir (a plain
// `terraform force-unlock` there would ask for init), without a prompt.
// The workspace terraform selected is in the data dir.
func (x *unitRun) forceUnlockCommand(id string) string {
	return fmt.Sprintf("cd %s && TF_DATA_DIR=%s %s %s", shellQuote(x.dir), shellQuote(x.w.DataDir),
		shellQuote(x.rs.eng.Path), strings.Join(mapQuote(tfcmd.ForceUnlock(id).Args), " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func mapQuote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return out
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
