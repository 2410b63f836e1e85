package runner

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/queue"
)

// RunOption is a choice a host makes for one Run: which units (filters,
// exact IDs, dependents, shard), how many at once, the failure policy, a
// Stop, skip-unchanged, the log dir and the events callback. Given to
// RunWith it applies to that Run only; given to New (a RunOption is an
// Option) it is the default of every Run of the Runner, which RunWith's
// own options override: a choice given to RunWith wins over New's, and
// filter patterns given to RunWith replace New's patterns instead of
// adding to them. An option that switches something on (WithFailFast,
// WithIgnoreErrors, WithIgnoreDependencyOrder, WithDependents,
// WithSkipUnchanged) cannot switch it off for one Run: give it per Run
// when only some Runs want it. The split follows net/http's Client and
// Request: the Runner holds what lives as long as the process, a Run
// what one call chose.
type RunOption interface {
	Option
	applyRun(*runConfig) error
}

type runOptionFunc func(*runConfig) error

func (f runOptionFunc) apply(c *config) error       { return f(&c.run) }
func (f runOptionFunc) applyRun(c *runConfig) error { return f(c) }

// runConfig is what RunOptions set: New's are the Runner's defaults,
// copied into each Run and overridden there by RunWith's.
type runConfig struct {
	parallelism   int
	failFast      bool
	ignoreErrors  bool
	ignoreOrder   bool
	filter        queue.Filter
	shardIndex    int
	shardCount    int
	ids           []string // exact selection by ID; nil: no such selection
	dependents    bool
	events        func(Event)
	logDir        string
	stop          *Stop
	skipUnchanged bool

	// perCall is set while RunWith's options apply; callFilter once one
	// of them replaced the defaults' patterns. A call's filter starts
	// empty, so it never appends to (and shares) the Runner's slices.
	perCall, callFilter bool
}

// forCall returns the Run's choices: the Runner's defaults with opts
// applied over them.
func (c runConfig) forCall(opts []RunOption) (runConfig, error) {
	c.perCall, c.callFilter = true, false
	for _, o := range opts {
		if o == nil {
			return runConfig{}, fmt.Errorf("%w: nil run option", ErrBadOption)
		}
		if err := o.applyRun(&c); err != nil {
			return runConfig{}, err
		}
	}
	c.perCall = false
	return c, nil
}

func (c *runConfig) policy(cmd Command) queue.Policy {
	return queue.Policy{
		Parallelism:  c.parallelism,
		Reverse:      cmd.reverse,
		IgnoreOrder:  c.ignoreOrder,
		FailFast:     c.failFast,
		IgnoreErrors: c.ignoreErrors,
	}
}

// WithParallelism sets how many units may run at once (n >= 1); the
// default is DefaultParallelism.
func WithParallelism(n int) RunOption {
	return runOptionFunc(func(c *runConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: WithParallelism(%d), want at least 1", ErrBadOption, n)
		}
		c.parallelism = n
		return nil
	})
}

// WithFailFast stops the run at the first failure: no unit starts after
// it, and units still running are interrupted (their context is
// cancelled, so terraform gets SIGINT) and reported Canceled. Units that
// never started are Skipped with ErrFailFast.
func WithFailFast() RunOption {
	return runOptionFunc(func(c *runConfig) error { c.failFast = true; return nil })
}

// WithIgnoreErrors runs the dependents of a failed unit anyway, as if it
// had succeeded; the failed unit is still Failed in the report.
func WithIgnoreErrors() RunOption {
	return runOptionFunc(func(c *runConfig) error { c.ignoreErrors = true; return nil })
}

// WithIgnoreDependencyOrder makes every unit eligible at once; DependsOn
// is still validated but no longer orders the run.
func WithIgnoreDependencyOrder() RunOption {
	return runOptionFunc(func(c *runConfig) error { c.ignoreOrder = true; return nil })
}

// WithFilter selects units by ID with globs: "*" matches within one path
// segment, "**" across "/" (doublestar syntax). A pattern starting with
// "!" excludes. A unit runs when it matches some include pattern (or
// there are none) and no exclude pattern. A pattern that matches none of
// the units given to Run is an error wrapping ErrNoMatch that names it, so
// a mistyped exclude never means "everything". Dependencies are not
// pulled in: an unselected dependency is assumed done (its outputs are
// read for a Generate that needs them, see Unit.Generate), though a path
// of dependencies through unselected units still orders the selected
// ones. May be given more than once; patterns add up. To run an exact
// list of units, whose IDs may hold glob characters, use WithIDs.
func WithFilter(patterns ...string) RunOption {
	return runOptionFunc(func(c *runConfig) error { return c.addFilter(patterns, false) })
}

// WithExclude excludes units whose ID matches any of the globs (a leading
// "!" turns a pattern back into an include); see WithFilter.
func WithExclude(patterns ...string) RunOption {
	return runOptionFunc(func(c *runConfig) error { return c.addFilter(patterns, true) })
}

func (c *runConfig) addFilter(patterns []string, exclude bool) error {
	f := c.filter
	if c.perCall && !c.callFilter {
		f = queue.Filter{}
	}
	if err := f.Add(patterns, exclude); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	c.filter = f
	if c.perCall {
		c.callFilter = true
	}
	return nil
}

// WithIDs runs exactly the units with these IDs (compared as strings, no
// globs), as a host that computed the set itself (from Affected, from a
// PR's changed files) wants. Pass every unit to Run, not only the chosen
// ones, so that their dependencies are known: a dependency outside the
// set counts as done, and a chosen unit's Generate still gets its
// Result, outputs included, read with terraform output before the Run
// starts (as for WithFilter). An ID no unit has is an error wrapping
// ErrNoMatch that names it; an empty list is refused (ErrBadOption).
// With filters or a shard, a unit runs when it is chosen and passes them.
// Given more than once, the last list wins.
func WithIDs(ids ...string) RunOption {
	return runOptionFunc(func(c *runConfig) error {
		if len(ids) == 0 {
			return fmt.Errorf("%w: WithIDs(): no IDs; to run nothing, do not call Run", ErrBadOption)
		}
		c.ids = append([]string(nil), ids...)
		return nil
	})
}

// WithDependents adds to the selection (after filters, WithIDs and the
// shard) every unit that depends on a selected unit, directly or through
// others: a changed VPC re-applies the units that read its outputs. A
// shard never splits dependent units, so they are on the same shard.
func WithDependents() RunOption {
	return runOptionFunc(func(c *runConfig) error { c.dependents = true; return nil })
}

// WithShard runs only shard index (0-based) of count: a deterministic
// subset for CI fan-out (one job of a matrix per shard). Every connected
// group of dependent units lands on one shard, shards are balanced by unit
// count, and the union of all shards is every unit exactly once. Sharding
// is computed over all units given to Run, before filters apply.
func WithShard(index, count int) RunOption {
	return runOptionFunc(func(c *runConfig) error {
		if count < 1 || index < 0 || index >= count {
			return fmt.Errorf("%w: WithShard(%d, %d), want 0 <= index < count", ErrBadOption, index, count)
		}
		c.shardIndex, c.shardCount = index, count
		return nil
	})
}

// WithEvents sets a callback for progress events. Calls are serialized
// and in order; the callback must not block for long, since units wait
// for it. nil turns events off.
func WithEvents(fn func(Event)) RunOption {
	return runOptionFunc(func(c *runConfig) error { c.events = fn; return nil })
}

// WithLogDir puts each unit's log in dir, named after the unit ID and
// the command: a readable, bounded, file-system-safe form of the ID plus
// a hash, so two IDs never share a file, then the command
// (ID-HASH.COMMAND.log), so a Plan and then an Apply under one log dir
// keep both logs. Without it the log of a unit is
// DATADIR/tfisolate-logs/COMMAND.log in its workdir. Logs hold what
// terraform prints (secrets too, with TF_LOG set): each is created 0600
// with exclusive create and renamed into place, so a symlink or file
// planted at its name is replaced, never followed or written; a log dir
// is created 0700. dir, and every dir above it unless sticky (as /tmp
// is), must be owned by the effective user or root and writable by no
// one else, or the unit fails with an error wrapping ErrBadOption that
// names the path, its owner and its mode.
func WithLogDir(dir string) RunOption {
	return runOptionFunc(func(c *runConfig) error {
		if dir == "" {
			return fmt.Errorf("%w: WithLogDir(\"\")", ErrBadOption)
		}
		c.logDir = dir
		return nil
	})
}

// WithStop ties a Run to s, a cancellation ladder a host CLI drives from
// repeated Ctrl-C (see Stop). Given to RunWith, s ends only that Run.
// Given to New, it applies to every Run of the Runner, the ones under way
// and later ones: once requested, every later Run stops at once (its
// units are Skipped with ErrStopped), so a host that runs more than once
// gives each Run its own Stop. The zero Stop is ready to use.
func WithStop(s *Stop) RunOption {
	return runOptionFunc(func(c *runConfig) error {
		if s == nil {
			return fmt.Errorf("%w: WithStop(nil)", ErrBadOption)
		}
		c.stop = s
		return nil
	})
}

// WithSkipUnchanged makes Apply skip a unit whose inputs are identical to
// those of that instance's last successful apply: the workdir's content
// (the component, every local module it reaches, however deep, and the
// generated files, variable files included), the lock file, terraform's
// kind and version, the workspace, the arguments, the unit's Env and the
// process's TF_VAR_*. Such a unit runs no terraform at all and is
// reported Succeeded with Result.Unchanged. It is for CI runs that only
// want what changed: drift in the real infrastructure, or a remote
// module whose version constraint now resolves to a newer release, is
// not an input and is not seen. See also Affected, which maps changed
// file paths to units.
func WithSkipUnchanged() RunOption {
	return runOptionFunc(func(c *runConfig) error { c.skipUnchanged = true; return nil })
}
