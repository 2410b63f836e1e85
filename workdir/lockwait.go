package workdir

import (
	"context"
	"time"
)

// LockWait describes a wait for an instance lock another holder has, as
// WithLockWait reports it.
type LockWait struct {
	Stack    string
	Instance string
	// Holder is the holder as it recorded itself; nil until it has (a
	// holder writes its note just after it takes the lock).
	Holder *Holder
	// Waited is how long the wait has lasted so far; with Done, in all.
	Waited time.Duration
	// Done is set on the last report of a wait: the lock was taken, or
	// the context ended it.
	Done bool
}

type lockWaitKey struct{}

// WithLockWait returns a context under which Prepare and Remove call fn
// when they start waiting for an instance lock another holder has, when
// the holder they read while waiting changes, and when the wait ends
// (LockWait.Done), so a host can show the wait as it happens rather than
// after it (net/http/httptrace hooks a request the same way). fn is
// called from the waiting goroutine and must not block for long. A lock
// taken at once reports nothing.
func WithLockWait(ctx context.Context, fn func(LockWait)) context.Context {
	return context.WithValue(ctx, lockWaitKey{}, fn)
}

// reportWait calls ctx's WithLockWait function, if any.
func reportWait(ctx context.Context, w LockWait) {
	if fn, _ := ctx.Value(lockWaitKey{}).(func(LockWait)); fn != nil {
		fn(w)
	}
}
