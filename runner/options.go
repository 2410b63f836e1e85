package runner

import (
	"fmt"
	"log/slog"
)

// DefaultParallelism is how many units run at once unless WithParallelism
// says otherwise. A terraform run spends its time waiting on cloud APIs,
// not on the CPU, so the limit is not tied to the core count; what it
// bounds is memory (each run is a terraform process plus its provider
// plugins, often a few hundred MB) and the request rate against the
// cloud's API limits. Ten matches terraform's own -parallelism default.
const DefaultParallelism = 10

// Option configures a Runner.
type Option func(*Runner) error

// WithParallelism sets how many units may run at once (n >= 1).
func WithParallelism(n int) Option {
	return func(r *Runner) error {
		if n < 1 {
			return fmt.Errorf("%w: parallelism %d, want at least 1", ErrBadOption, n)
		}
		r.parallelism = n
		return nil
	}
}

// WithFailFast stops the run at the first failure: no unit starts after
// it, and units still running are interrupted (their context is
// cancelled, so terraform gets SIGINT) and reported Canceled. Units that
// never started are Skipped with ErrFailFast.
func WithFailFast() Option {
	return func(r *Runner) error { r.failFast = true; return nil }
}

// WithIgnoreErrors runs the dependents of a failed unit anyway.
func WithIgnoreErrors() Option {
	return func(r *Runner) error { r.ignoreErrors = true; return nil }
}

// WithIgnoreDependencyOrder makes every unit eligible at once; DependsOn
// is still validated but no longer orders the run.
func WithIgnoreDependencyOrder() Option {
	return func(r *Runner) error { r.ignoreOrder = true; return nil }
}

// WithFilter selects units by ID. Each pattern is a path.Match glob; a
// pattern starting with "!" excludes. A unit runs when it matches some
// include pattern (or there are none) and no exclude pattern. Dependencies
// are not pulled in: an unselected dependency is assumed done, though a
// path of dependencies through unselected units still orders the selected
// ones. May be given more than once; patterns add up.
func WithFilter(patterns ...string) Option {
	return func(r *Runner) error { return r.filter.add(patterns, false) }
}

// WithInclude is WithFilter; it reads better next to WithExclude.
func WithInclude(patterns ...string) Option { return WithFilter(patterns...) }

// WithExclude excludes units whose ID matches any of the globs (a leading
// "!" turns a pattern back into an include).
func WithExclude(patterns ...string) Option {
	return func(r *Runner) error { return r.filter.add(patterns, true) }
}

// WithShard runs only shard index (0-based) of count: a deterministic
// subset for CI fan-out (one job of a matrix per shard). Every connected
// group of dependent units lands on one shard, shards are balanced by unit
// count, and the union of all shards is every unit exactly once. Sharding
// is computed over all units given to Run, before filters apply.
func WithShard(index, count int) Option {
	return func(r *Runner) error {
		if count < 1 || index < 0 || index >= count {
			return fmt.Errorf("%w: shard %d of %d, want 0 <= index < count", ErrBadOption, index, count)
		}
		r.shardIndex, r.shardCount = index, count
		return nil
	}
}

// WithEvents sets a callback for progress events. Calls are serialized
// and in order; the callback must not block for long, since units wait
// for it.
func WithEvents(fn func(Event)) Option {
	return func(r *Runner) error { r.events = fn; return nil }
}

// WithLogger sets the logger for the runner's own diagnostics; the
// default discards them.
func WithLogger(l *slog.Logger) Option {
	return func(r *Runner) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrBadOption)
		}
		r.logger = l
		return nil
	}
}
