package retry

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

var throttled = regexp.MustCompile(`(?i)too many requests|giving up after \d+ attempt\(s\)`)

// TestJitter: each wait is spread over 80-120 % of the policy's backoff.
func TestJitter(t *testing.T) {
	const d = 10 * time.Second
	lo, hi := d, time.Duration(0)
	for range 1000 {
		j := jitter(d)
		require.GreaterOrEqual(t, j, d*8/10)
		require.LessOrEqual(t, j, d*12/10)
		lo, hi = min(lo, j), max(hi, j)
	}
	require.Less(t, lo, d*9/10, "waits spread below the backoff")
	require.Greater(t, hi, d*11/10, "and above it")
	require.Zero(t, jitter(0))
}

// TestWait: waits double from Backoff and stop growing at MaxBackoff; no
// MaxBackoff, no bound.
func TestWait(t *testing.T) {
	p := Policy{Backoff: 5 * time.Second, MaxBackoff: 30 * time.Second}
	for n, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second} {
		require.Equal(t, want, p.wait(n+1), "repeat %d", n+1)
	}
	require.Equal(t, 40*time.Second, Policy{Backoff: 5 * time.Second}.wait(4))
	require.Equal(t, 7*time.Second, Policy{Backoff: 9 * time.Second, MaxBackoff: 7 * time.Second}.wait(1))
}

// TestTransient: a failure is transient when a pattern matches its
// message as printed or with the engine's line wrapping undone; nil and
// unmatched errors are not.
func TestTransient(t *testing.T) {
	p := Policy{Patterns: []*regexp.Regexp{regexp.MustCompile(`quota bucket empty`), throttled}}
	require.True(t, p.Transient(errors.New("Error: 429 Too Many Requests")))
	require.True(t, p.Transient(errors.New("quota bucket empty, come back later")))
	require.True(t, p.Transient(errors.New("GET https://127.0.0.1:4321/state giving up after 2\nattempt(s)")), "wrapped by the engine")
	require.False(t, p.Transient(errors.New("permission denied")))
	require.False(t, p.Transient(nil))
	require.False(t, Policy{}.Transient(errors.New("429 Too Many Requests")), "no patterns, nothing is transient")
}

// TestMayHaveChanged: only an engine failure that started a change or
// could not save the state, wrapped or not, may have changed anything.
func TestMayHaveChanged(t *testing.T) {
	require.True(t, MayHaveChanged(fmt.Errorf("apply: %w", &tfcmd.Error{Command: "apply", ChangeStarted: true})))
	require.True(t, MayHaveChanged(&tfcmd.Error{Command: "apply", Stderr: "Error: Failed to save state"}))
	require.False(t, MayHaveChanged(&tfcmd.Error{Command: "apply", Stderr: "Error: 429 Too Many Requests"}))
	require.False(t, MayHaveChanged(errors.New("Failed to save state")), "not the engine's failure")
	require.False(t, MayHaveChanged(nil))
}

// TestDo: which failures are repeated, how often, and what onRetry and
// the caller see.
func TestDo(t *testing.T) {
	transient := errors.New("429 Too Many Requests")
	permanent := errors.New("permission denied")
	changed := &tfcmd.Error{Command: "apply", Stderr: "429 Too Many Requests", ChangeStarted: true}
	tests := []struct {
		name  string
		max   int
		errs  []error // fn's results, in order; nil after the last
		calls int
		want  error
	}{
		{"success at once", 2, nil, 1, nil},
		{"transient then success", 2, []error{transient}, 2, nil},
		{"transient until Max", 2, []error{transient, transient, transient, transient}, 3, transient},
		{"Max 0 never repeats", 0, []error{transient}, 1, transient},
		{"permanent", 2, []error{permanent}, 1, permanent},
		{"may have changed", 2, []error{changed}, 1, changed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Max: tt.max, Backoff: time.Microsecond, Patterns: []*regexp.Regexp{throttled}}
			calls, retries := 0, 0
			err := p.Do(context.Background(), func(n int, err error, wait time.Duration) {
				retries++
				require.Equal(t, retries, n)
				require.Equal(t, tt.errs[n-1], err)
				require.GreaterOrEqual(t, wait, p.wait(n)*8/10)
				require.LessOrEqual(t, wait, p.wait(n)*12/10)
			}, func() error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			require.Equal(t, tt.calls, calls)
			require.Equal(t, tt.calls-1, retries)
			require.Equal(t, tt.want, err)
		})
	}
}

// TestDoStopsWithContext: a context done during a wait ends it at once
// with the last error, and one done before a failure stops the repeats.
func TestDoStopsWithContext(t *testing.T) {
	transient := errors.New("429 Too Many Requests")
	p := Policy{Max: 5, Backoff: time.Hour, Patterns: []*regexp.Regexp{throttled}}

	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := p.Do(ctx, func(int, error, time.Duration) { cancel() }, func() error { calls++; return transient })
	require.Equal(t, transient, err)
	require.Equal(t, 1, calls, "no repeat after the context is done")

	calls = 0
	err = p.Do(ctx, func(int, error, time.Duration) { t.Fatal("no wait once the context is done") }, func() error { calls++; return transient })
	require.Equal(t, transient, err)
	require.Equal(t, 1, calls)
}
