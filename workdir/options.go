package workdir

import (
	"log/slog"
	"time"
)

// Option configures a Manager.
type Option func(*Manager)

// WithLogger sends the manager's debug and info records to l. The default
// discards them.
func WithLogger(l *slog.Logger) Option {
	return func(m *Manager) {
		if l != nil {
			m.log = l
		}
	}
}

// WithLockRetry sets how often a waiting Prepare or Remove retries the
// instance lock (default 50ms). flock has no portable blocking wait that
// honours a context, so waiting is polling.
func WithLockRetry(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.lockRetry = d
		}
	}
}

// withHook lets tests observe (and stall) materialization: it is called
// after each file is written, with the path written.
func withHook(f func(path string)) Option {
	return func(m *Manager) { m.hook = f }
}
