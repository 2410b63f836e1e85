package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// stateLockMarker is how terraform reports a state lock held by someone
// else, on every backend.
const stateLockMarker = "Error acquiring the state lock"

var (
	lockIDRe  = regexp.MustCompile(`(?m)^\s*ID:\s*(\S+)`)
	lockWhoRe = regexp.MustCompile(`(?m)^\s*Who:\s*(.+?)\s*$`)
)

const unknownHolder = "unknown holder"

// lockHolder extracts "ID" and "Who" from terraform's lock error text.
func lockHolder(msg string) string {
	var parts []string
	if m := lockIDRe.FindStringSubmatch(msg); m != nil {
		parts = append(parts, "ID "+m[1])
	}
	if m := lockWhoRe.FindStringSubmatch(msg); m != nil {
		parts = append(parts, "Who "+m[1])
	}
	if len(parts) == 0 {
		return unknownHolder
	}
	return strings.Join(parts, ", ")
}

// lockBackoff bounds each attempt's -lock-timeout after the first.
const (
	lockFirstStep = 500 * time.Millisecond
	lockMaxStep   = 8 * time.Second
)

// withStateLock runs fn until it does not fail on a state lock or the
// lock timeout is spent. fn gets the -lock-timeout for its attempt.
//
// The first attempt uses -lock-timeout=0s, so a held lock shows up at once
// with its holder; later attempts let terraform itself wait for a growing
// step (that is the backoff). LockWait counts from the first lock error to
// the start of the attempt that got through; a wait absorbed inside that
// last attempt's own -lock-timeout is not counted.
func (x *unitRun) withStateLock(ctx context.Context, what string, fn func(lockTimeout string) error) error {
	var waitedFrom time.Time // start of the first attempt that met a lock
	step := time.Duration(0)
	for {
		start := time.Now()
		err := fn(fmt.Sprintf("%dms", step.Milliseconds()))
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), stateLockMarker) {
			if !waitedFrom.IsZero() {
				x.res.LockWait += start.Sub(waitedFrom)
			}
			return err
		}
		if waitedFrom.IsZero() {
			waitedFrom = start
		}
		// A later attempt may catch the lock between holders, when
		// terraform cannot read who holds it; keep the last known holder.
		if h := lockHolder(err.Error()); h != unknownHolder || x.res.LockHolder == "" {
			x.res.LockHolder = h
		}
		remaining := x.r.lockTimeout - time.Since(waitedFrom)
		if remaining <= 0 {
			x.res.LockWait += time.Since(waitedFrom)
			return fmt.Errorf("%s: %w (held by %s), gave up after %s: %w", what, ErrStateLocked, x.res.LockHolder, x.r.lockTimeout, err)
		}
		x.out.note(fmt.Sprintf("%s: state is locked (%s); waiting up to %s more", what, x.res.LockHolder, remaining.Round(time.Second)))
		if step == 0 {
			step = lockFirstStep
		} else {
			step = min(2*step, lockMaxStep)
		}
		step = min(step, remaining)
	}
}
