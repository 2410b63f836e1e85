package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// Policy is how often, after which failures and with which waits Do
// repeats a call. The zero Policy never repeats.
type Policy struct {
	// Max is how many times a failed call is repeated (0: never).
	Max int
	// Backoff is the wait before the first repeat; each later one waits
	// twice as long, up to MaxBackoff (0: no bound), then jittered.
	Backoff, MaxBackoff time.Duration
	// Patterns are what makes a failure transient: its message matches
	// one of them. Nil entries are not allowed.
	Patterns []*regexp.Regexp
}

// Transient reports whether err matches one of the policy's patterns,
// as the engine printed it or with its line wrapping undone (see
// tfcmd.Unwrapped).
func (p Policy) Transient(err error) bool {
	if err == nil {
		return false
	}
	msg, flat := err.Error(), tfcmd.Unwrapped(err)
	for _, re := range p.Patterns {
		if re.MatchString(msg) || re.MatchString(flat) {
			return true
		}
	}
	return false
}

// MayHaveChanged reports whether err is an engine failure after which
// infrastructure may differ from the state: a change had started, or
// the state of one could not be saved (see tfcmd.Error.MayHaveChanged).
// Such a command must never be repeated by itself.
func MayHaveChanged(err error) bool {
	var te *tfcmd.Error
	return errors.As(err, &te) && te.MayHaveChanged()
}

// jitter spreads a wait over 80-120 % of d, so units throttled together
// do not retry in lockstep and meet the throttle again.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*8/10 + rand.N(d*4/10+1)
}

// wait returns how long to wait before repeat n (1-based), before jitter.
func (p Policy) wait(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n; i++ {
		d *= 2
		if p.MaxBackoff > 0 && d >= p.MaxBackoff {
			return p.MaxBackoff
		}
	}
	if p.MaxBackoff > 0 {
		d = min(d, p.MaxBackoff)
	}
	return d
}

// Do calls fn, and again after each transient failure, up to Max
// repeats. It returns fn's last error (nil once fn succeeds) and stops
// at once, with that error, when the failure is not transient, when
// MayHaveChanged says so, or when ctx is done, before or during a wait.
// onRetry is called before each wait with the repeat's number (1-based),
// the error and the wait.
func (p Policy) Do(ctx context.Context, onRetry func(n int, err error, wait time.Duration), fn func() error) error {
	for n := 1; ; n++ {
		err := fn()
		if err == nil || n > p.Max || ctx.Err() != nil || !p.Transient(err) || MayHaveChanged(err) {
			return err
		}
		d := jitter(p.wait(n))
		onRetry(n, err, d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
