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
type flight struct {
	leader string
	done   chan struct{}
	res    setup
	err    error
}

// flights runs the provider setup once per requirement set within a Run.
// Unlike x/sync/singleflight, a follower keeps its own context: it stops
// waiting when its context ends, while the leader finishes for the others.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// do returns the setup for key, running fn if this caller is the first to
// ask (the leader). A leader's failure is every follower's failure: the
// error wraps ErrInit and the leader's cause and names the leader.
func (fs *flights) do(ctx context.Context, key, unit string, fn func() (setup, error)) (setup, bool, error) {
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[string]*flight{}
	}
	f, ok := fs.m[key]
	if !ok {
		f = &flight{leader: unit, done: make(chan struct{})}
		fs.m[key] = f
	}
	fs.mu.Unlock()
	if !ok {
		f.res, f.err = fn()
		if f.err != nil {
			f.err = fmt.Errorf("%w: %w", ErrInit, f.err)
		}
		close(f.done)
		return f.res, true, f.err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return setup{}, false, ctx.Err()
	}
	if f.err != nil {
		return setup{}, false, fmt.Errorf("shared with %s: %w", f.leader, f.err)
	}
	return f.res, false, nil
}
