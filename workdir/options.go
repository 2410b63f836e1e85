package workdir

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Manager. Options are applied in order by New, which
// fails with an error naming the first option whose value is invalid.
type Option interface {
	apply(*config) error
}

// optionFunc adapts a function to Option; keeping config unexported keeps
// it out of godoc and lets it grow without breaking callers.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what options set; New copies it into the Manager.
type config struct {
	log       *slog.Logger
	lockRetry time.Duration
	hook      func(path string)
}

func defaultConfig() config {
	return config{log: slog.New(slog.DiscardHandler), lockRetry: 50 * time.Millisecond}
}

// WithLogger sends the manager's debug and info records to l. A nil l
// discards them, which is also the default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.log = l
		return nil
	})
}

// WithLockRetry sets how often a waiting Prepare or Remove retries the
// instance lock (default 50ms); d must be positive. flock has no portable
// blocking wait that honours a context, so waiting is polling.
func WithLockRetry(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalid("option", fmt.Sprintf("WithLockRetry(%s)", d), "the retry interval must be positive")
		}
		c.lockRetry = d
		return nil
	})
}

// withHook lets tests observe (and stall) materialization: it is called
// after each source file is written, with the path written.
func withHook(f func(path string)) Option {
	return optionFunc(func(c *config) error {
		c.hook = f
		return nil
	})
}
