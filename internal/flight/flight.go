package flight

import (
	"context"
	"fmt"
	"sync"
)

// Group runs at most one fn per key at a time and shares its result. The
// zero value is ready to use and remembers every result for its lifetime.
type Group[T any] struct {
	// Forget drops a key as soon as its flight ends: later callers run fn
	// again. Without it a key's first completed result (success or
	// failure) is every later caller's answer for the Group's lifetime.
	Forget bool

	mu sync.Mutex
	m  map[string]*call[T]

	// testHookWaiting, when set, runs when a follower starts waiting, so
	// tests can hold a leader until its followers have joined.
	testHookWaiting func(key, who string)
}

// call is one leader's run of fn; followers wait on done.
type call[T any] struct {
	leader string
	done   chan struct{}
	res    T
	err    error
	// abandoned: the leader's own context ended before fn succeeded, so
	// its error says nothing about the work; followers retry.
	abandoned bool
}

// Error is what a follower gets when the leader's fn failed. It names the
// leader and unwraps to the leader's error.
type Error struct {
	Leader string // the who of the leader's Do call
	Err    error  // the leader's error
}

// Error reads "shared with LEADER: cause".
func (e *Error) Error() string { return "shared with " + e.Leader + ": " + e.Err.Error() }

// Unwrap returns the leader's error.
func (e *Error) Unwrap() error { return e.Err }

// Do returns the result of fn for key. If no flight for key is under way
// (and, without Forget, none has completed), the caller becomes the leader
// and runs fn in its own goroutine; leader reports that. Otherwise the
// caller waits, until the flight ends or ctx does, and gets the leader's
// result, or its error wrapped in an *Error naming the leader (who of the
// leader's call). A follower whose leader's context ended, while its own
// did not, runs the work again, maybe as the new leader. If fn panics, the
// panic propagates in the leader's goroutine and the flight fails for its
// followers.
func (g *Group[T]) Do(ctx context.Context, key, who string, fn func() (T, error)) (res T, leader bool, err error) {
	var zero T
	for {
		if err := ctx.Err(); err != nil {
			return zero, false, err
		}
		g.mu.Lock()
		if g.m == nil {
			g.m = map[string]*call[T]{}
		}
		c, follower := g.m[key]
		if !follower {
			c = &call[T]{leader: who, done: make(chan struct{})}
			g.m[key] = c
		}
		g.mu.Unlock()

		if !follower {
			return g.lead(ctx, key, c, fn)
		}
		if g.testHookWaiting != nil {
			g.testHookWaiting(key, who)
		}
		select {
		case <-ctx.Done():
			return zero, false, ctx.Err()
		case <-c.done:
		}
		if c.abandoned {
			continue // the leader gave up for its own reasons, not ours
		}
		if c.err != nil {
			return zero, false, &Error{Leader: c.leader, Err: c.err}
		}
		return c.res, false, nil
	}
}

// lead runs fn as key's leader and publishes the result.
func (g *Group[T]) lead(ctx context.Context, key string, c *call[T], fn func() (T, error)) (T, bool, error) {
	finished := false
	defer func() {
		if !finished {
			// fn panicked: fail the flight so no follower waits forever,
			// and let the panic go on in the leader's goroutine.
			c.err = fmt.Errorf("flight %q: leader panicked", key)
			g.end(key, c, true)
		}
	}()
	c.res, c.err = fn()
	finished = true
	c.abandoned = c.err != nil && ctx.Err() != nil
	g.end(key, c, g.Forget || c.abandoned)
	return c.res, true, c.err
}

// end drops the flight from the map if it is not to be remembered (drop),
// then wakes the followers.
func (g *Group[T]) end(key string, c *call[T], drop bool) {
	g.mu.Lock()
	if drop && g.m[key] == c {
		delete(g.m, key)
	}
	g.mu.Unlock()
	close(c.done)
}
