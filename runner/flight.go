package runner

import (
	"context"
	"fmt"
	"sync"
)

// setup is what a singleflight leader produces for every unit with the
// same provider requirements.
type setup struct {
	lockFile  []byte // .terraform.lock.hcl content
	cliConfig string // path of a terraform CLI config pointing at the cache
}

// flight is one leader's work; followers wait on done.
type flight[T any] struct {
	leader string
	done   chan struct{}
	res    T
	err    error
}

// flights runs one piece of shared work once per key within a Run (the
// provider setup per requirement set, the module fetch per module key).
// Unlike x/sync/singleflight, a follower keeps its own context: it stops
// waiting when its context ends, while the leader finishes for the others.
type flights[T any] struct {
	// kind is the sentinel a leader's error is wrapped in; ErrInit when nil.
	kind error

	mu sync.Mutex
	m  map[string]*flight[T]
}

// do returns the result for key, running fn if this caller is the first to
// ask (the leader). A leader's failure is every follower's failure: the
// error wraps the flights' kind and the leader's cause and names the leader.
func (fs *flights[T]) do(ctx context.Context, key, unit string, fn func() (T, error)) (T, bool, error) {
	var zero T
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[string]*flight[T]{}
	}
	f, ok := fs.m[key]
	if !ok {
		f = &flight[T]{leader: unit, done: make(chan struct{})}
		fs.m[key] = f
	}
	fs.mu.Unlock()
	if !ok {
		f.res, f.err = fn()
		if f.err != nil {
			kind := fs.kind
			if kind == nil {
				kind = ErrInit
			}
			f.err = fmt.Errorf("%w: %w", kind, f.err)
		}
		close(f.done)
		return f.res, true, f.err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return zero, false, ctx.Err()
	}
	if f.err != nil {
		return zero, false, fmt.Errorf("shared with %s: %w", f.leader, f.err)
	}
	return f.res, false, nil
}
