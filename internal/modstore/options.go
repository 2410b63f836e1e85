package modstore

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Store. Options are applied in order by Open, which
// fails with an error naming the first option whose value is invalid.
type Option interface {
	apply(*config) error
}

// optionFunc adapts a function to Option; keeping config unexported keeps
// it out of godoc and lets it grow without breaking callers.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// DefaultLockRetry is how often a Get waiting for another process's fill
// retries the key's lock unless WithLockRetry says otherwise.
const DefaultLockRetry = 10 * time.Millisecond

// config is what options set; Open copies it into the Store.
type config struct {
	log       *slog.Logger
	lockRetry time.Duration
	full      bool
}

func defaultConfig() config {
	return config{log: slog.New(slog.DiscardHandler), lockRetry: DefaultLockRetry}
}

// WithLogger sends the store's records to l: Info when it fills an entry
// or sweeps leftovers, Warn when it finds a damaged entry, Debug when it
// waits for another process. A nil l discards them, which is also the
// default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.log = l
		return nil
	})
}

// WithLockRetry sets how often a Get waiting for another process's fill
// retries the key's lock (default DefaultLockRetry); d must be positive.
// flock has no portable blocking wait that honours a context, so waiting
// is polling; the context is checked between tries.
func WithLockRetry(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("modstore: WithLockRetry(%s): the retry interval must be positive", d)
		}
		c.lockRetry = d
		return nil
	})
}

// WithFullCheck makes every Get that finds an entry read and hash all of
// its files against the manifest, instead of the cheap check (the file
// list, types, modes, sizes, symlink targets and change stamps, no file
// read). For callers that distrust the filesystem more than the cost of
// reading every entry on every use.
func WithFullCheck() Option {
	return optionFunc(func(c *config) error {
		c.full = true
		return nil
	})
}
