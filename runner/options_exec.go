package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// DefaultLockTimeout is how long a unit waits out a terraform state lock
// held by someone else unless WithLockTimeout says otherwise.
const DefaultLockTimeout = 5 * time.Minute

// DefaultInterruptGrace is how long terraform gets to stop after SIGINT
// (release its state lock, write state) before it is killed.
const DefaultInterruptGrace = 30 * time.Second

// WithWorkdirs sets the workdir manager every unit's workdir comes from.
// Required by New.
func WithWorkdirs(m *workdir.Manager) Option {
	return func(r *Runner) error {
		if m == nil {
			return fmt.Errorf("%w: nil workdir manager", ErrBadOption)
		}
		r.workdirs = m
		return nil
	}
}

// WithPluginCache makes units get their providers from c: one leader per
// provider requirement set ensures the packages and computes the lock
// file, and terraform reads the cache as a filesystem mirror. Without it,
// terraform init installs providers itself, into each unit's own data dir.
func WithPluginCache(c *pluginc.Cache) Option {
	return func(r *Runner) error {
		if c == nil {
			return fmt.Errorf("%w: nil plugin cache", ErrBadOption)
		}
		r.cache = c
		return nil
	}
}

// WithTerraform sets the terraform executable. Without it New looks on
// PATH and then installs a pinned release under the user cache dir.
func WithTerraform(execPath string) Option {
	return func(r *Runner) error {
		if execPath == "" {
			return fmt.Errorf("%w: empty terraform path", ErrBadOption)
		}
		r.tfPath = execPath
		return nil
	}
}

// WithLockTimeout sets how long a unit waits for a state lock held by
// someone else before failing with ErrStateLocked (0: fail at once).
func WithLockTimeout(d time.Duration) Option {
	return func(r *Runner) error {
		if d < 0 {
			return fmt.Errorf("%w: negative lock timeout %s", ErrBadOption, d)
		}
		r.lockTimeout = d
		return nil
	}
}

// WithOutput sets a combined stream for the output of every unit: each
// line is prefixed with "[unitID] " and written whole, so lines of
// different units never interleave. Writes are serialized.
func WithOutput(w io.Writer) Option {
	return func(r *Runner) error { r.output = w; return nil }
}

// WithLogDir puts each unit's log in dir, named after the unit ID
// (path-escaped). Without it the log of a unit is
// DATADIR/tfisolate-logs/COMMAND.log in its workdir.
func WithLogDir(dir string) Option {
	return func(r *Runner) error {
		if dir == "" {
			return fmt.Errorf("%w: empty log dir", ErrBadOption)
		}
		r.logDir = dir
		return nil
	}
}

// WithInterruptGrace sets how long terraform gets after SIGINT before it is
// killed, once the run's context is cancelled.
func WithInterruptGrace(d time.Duration) Option {
	return func(r *Runner) error {
		if d <= 0 {
			return fmt.Errorf("%w: interrupt grace %s, want > 0", ErrBadOption, d)
		}
		r.grace = d
		return nil
	}
}
