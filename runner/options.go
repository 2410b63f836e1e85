package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// DefaultParallelism is how many units run at once unless WithParallelism
// says otherwise. A terraform run spends its time waiting on cloud APIs,
// not on the CPU, so the limit is not tied to the core count; what it
// bounds is memory (each run is a terraform process plus its provider
// plugins, often a few hundred MB) and the request rate against the
// cloud's API limits. Ten matches terraform's own -parallelism default.
const DefaultParallelism = 10

// DefaultLockTimeout is how long a unit waits out a terraform state lock
// held by someone else unless WithLockTimeout says otherwise.
const DefaultLockTimeout = 5 * time.Minute

// DefaultInterruptGrace is how long terraform gets to stop after SIGINT
// (release its state lock, write state) before it is killed.
const DefaultInterruptGrace = 30 * time.Second

// DefaultCrashedEngineWait is how long a unit waits, unless
// WithCrashedEngineWait says otherwise, for the terraform that an earlier
// run of its instance started and left running when its host died: an
// engine interrupted by its host's death still stops its operation and
// writes its state, which can take as long as the provider call it was in.
const DefaultCrashedEngineWait = 5 * time.Minute

// Option configures a Runner: what lives as long as the process
// (workdirs, plugin cache, module store, engine, logger, retry and lock
// patience). Every RunOption is an Option too: given to New it is the
// default of every Run (see RunOption). New applies options in order and
// fails with an error wrapping ErrBadOption that names an option whose
// value is invalid.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what options set; a Runner keeps it unchanged after New.
type config struct {
	// run holds the defaults of every Run: the RunOptions given to New.
	run    runConfig
	logger *slog.Logger

	workdirs     *workdir.Manager
	cache        *pluginc.Cache
	tfPath       string
	finder       func(ctx context.Context) (string, error)
	lockTimeout  time.Duration
	output       io.Writer
	grace        time.Duration
	crashWait    time.Duration
	retry        RetryPolicy
	recoverLocks bool
	moduleStore  string
	moduleServer string // WithModuleServer's URL
	memory       memoryOptions
	coreGate     int  // WithCoreGate's cores (0: the machine's)
	coreGateSet  bool // WithCoreGate was given
}

// moduleStoreDir is where remote modules are kept across Runs and
// processes: WithModuleStore's dir, else beside the plugin cache's
// packages (a dot dir, which terraform reading the cache as a mirror
// skips), else none.
func (c *config) moduleStoreDir() string {
	switch {
	case c.moduleStore == "-":
		return ""
	case c.moduleStore != "":
		return c.moduleStore
	case c.cache != nil:
		return filepath.Join(c.cache.Dir(), ".modules")
	}
	return ""
}

// WithLogger sets the logger for the runner's own diagnostics; nil, like
// the default, discards them.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error { c.logger = l; return nil })
}

// WithWorkdirs sets the workdir manager every unit's workdir comes from.
// Required by New.
func WithWorkdirs(m *workdir.Manager) Option {
	return optionFunc(func(c *config) error {
		if m == nil {
			return fmt.Errorf("%w: WithWorkdirs(nil)", ErrBadOption)
		}
		c.workdirs = m
		return nil
	})
}

// WithPluginCache makes units get their providers from cache: one leader
// per provider requirement set ensures the packages and computes the lock
// file, and terraform reads the cache as a filesystem mirror. Without it,
// terraform init installs providers itself, into each unit's own data dir.
func WithPluginCache(cache *pluginc.Cache) Option {
	return optionFunc(func(c *config) error {
		if cache == nil {
			return fmt.Errorf("%w: WithPluginCache(nil)", ErrBadOption)
		}
		c.cache = cache
		return nil
	})
}

// WithTerraform sets the terraform (or tofu) executable. Without it the
// first Run looks for terraform on PATH and then installs a pinned
// release under the user cache dir (see WithFinder).
func WithTerraform(execPath string) Option {
	return optionFunc(func(c *config) error {
		if execPath == "" {
			return fmt.Errorf("%w: WithTerraform(\"\")", ErrBadOption)
		}
		c.tfPath = execPath
		return nil
	})
}

// WithOpenTofu makes the first Run look for OpenTofu's tofu on PATH
// instead of terraform (WithTerraform wins over it; of WithOpenTofu and
// WithFinder, the one given last). Short
// provider addresses then resolve on OpenTofu's registry, and lock files
// and the CLI config are written for it.
func WithOpenTofu() Option {
	return optionFunc(func(c *config) error {
		c.finder = func(ctx context.Context) (string, error) { return engine.Find(ctx, engine.OpenTofu, "") }
		return nil
	})
}

// WithFinder sets how the first Run finds the executable, under its
// context; a failure is wrapped in ErrNoTerraform and tried again by the
// next Run.
func WithFinder(find func(ctx context.Context) (string, error)) Option {
	return optionFunc(func(c *config) error {
		if find == nil {
			return fmt.Errorf("%w: WithFinder(nil)", ErrBadOption)
		}
		c.finder = find
		return nil
	})
}

// WithLockTimeout sets how long a unit waits for a state lock held by
// someone else before failing with ErrStateLocked (0: fail at once).
func WithLockTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: WithLockTimeout(%s), want >= 0", ErrBadOption, d)
		}
		c.lockTimeout = d
		return nil
	})
}

// WithOutput sets a combined stream for the output of every unit: each
// line is prefixed with "[unitID] " and written whole, so lines of
// different units never interleave. Writes are serialized.
func WithOutput(w io.Writer) Option {
	return optionFunc(func(c *config) error { c.output = w; return nil })
}

// WithInterruptGrace sets how long terraform gets after SIGINT before it is
// killed, once the run's context is cancelled.
func WithInterruptGrace(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithInterruptGrace(%s), want > 0", ErrBadOption, d)
		}
		c.grace = d
		return nil
	})
}

// WithRetry sets how transient errors are retried (see RetryPolicy);
// without it DefaultRetry applies. RetryPolicy{} turns retries off.
func WithRetry(p RetryPolicy) Option {
	return optionFunc(func(c *config) error {
		if err := p.check(); err != nil {
			return fmt.Errorf("%w: WithRetry: %w", ErrBadOption, err)
		}
		c.retry = p
		return nil
	})
}

// WithCrashedEngineWait sets how long a unit waits for the engine an
// earlier, crashed run of its instance left running (found through the
// instance's journal, on Linux: the process and the process group the SDK
// started) before it fails with an *EngineRunningError naming its PID.
// The SDK never kills such an engine: it may be writing the state. 0
// fails at once when one runs. The default is DefaultCrashedEngineWait.
func WithCrashedEngineWait(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: WithCrashedEngineWait(%s): must not be negative", ErrBadOption, d)
		}
		c.crashWait = d
		return nil
	})
}

// WithStaleLockRecovery lets a unit release a state lock that its own
// instance's earlier run left behind when that run crashed (or its
// terraform had to be killed), instead of waiting it out and failing.
// The proof comes from a journal each run keeps in the instance's data
// dir under the instance lock: the earlier run never finished (its
// process is gone, since this run holds the instance lock), and the
// lock's holder (user@host) and creation time, as terraform reports
// them, fall inside the life of that run's last terraform: from its
// start (within a second) to its last sign of life the runner can
// prove, and never later, nor more than two minutes after its start.
// That last sign is the last write to the engine's output files (only
// the engine writes them), the last moment a later run waiting for it
// saw it running, or, when its own host had to kill it, its output's
// last write as that host read it; never the moment the next run looks.
// So a lock taken after the crashed run's engine was gone, by anyone,
// even seconds after the crash, is never released: the unit waits for it
// as for any live holder and fails with ErrStateLocked naming it. A
// lock time written to the second (or millisecond) stands for the whole
// second (or millisecond). A lock that cannot be proven so is waited
// for as usual. Residual risk: another terraform run by the same user
// on the same host, outside this SDK, that locked the same state while
// the crashed run's terraform was still running and still holds it,
// would be unlocked; and backends that do not report the holder
// (terraform's http and pg backends print only an ID or nothing) are
// never recovered; nor is a lock whose engine wrote nothing after taking
// it before it died. Recovered locks are listed in Result.RecoveredLocks.
func WithStaleLockRecovery() Option {
	return optionFunc(func(c *config) error { c.recoverLocks = true; return nil })
}

// WithModuleStore keeps fetched remote modules in dir, shared by every
// Run and every process on the machine that uses it: each set of module
// calls is fetched once per engine version, under a per-key flock, into
// a temp dir that is verified and renamed into place, so a process killed
// mid-fetch leaves nothing a later Run would use. Without it the store is
// DIR/.modules beside the plugin cache's packages when there is one;
// "-" turns the store off (modules are fetched once per Run). A stored
// set is reused as is: a module source that names a moving target (a
// branch, a version range) is fetched again only with Args.Upgrade, and
// that fetch replaces the stored set (atomically, under its flock), so
// every instance of the component gets the upgrade on its next run. A
// stored set older than an instance's own modules is never copied over
// them: the instance keeps its own and the store is refreshed from them.
//
// The store trusts only what the effective user (or root) wrote, as the
// plugin cache does (invariant 12): dir, every dir above it (a sticky one,
// as /tmp is, may be writable by all) and the store's own dirs must be
// theirs and writable by no one else, or Run fails with an error naming
// the path, its owner and its mode (modstore's ErrUnsafePath); an entry
// someone else could have written is fetched again into a private one.
// The default beside the plugin cache is never used when it fails that
// rule (a cache shared with a group, pluginc.WithSharedGroup): the Run
// goes without a store and logs a warning.
func WithModuleStore(dir string) Option {
	return optionFunc(func(c *config) error {
		if dir == "" {
			return fmt.Errorf("%w: WithModuleStore(\"\")", ErrBadOption)
		}
		c.moduleStore = dir
		return nil
	})
}

// WithCoreGate schedules the units' terraform processes by the cores
// they use, not only by count: a process starts only while fewer than
// cores units are busy (0: the Go runtime's GOMAXPROCS, the machine's
// cores or its cgroup's CPU limit). Busy is measured from the CPU time
// of each unit's process tree (terraform, its providers and
// provisioners), sampled while it runs: a unit loading its
// configuration or hashing providers counts, one whose apply waits on
// its cloud, a lock or a provisioner's sleep does not. So units overlap
// their CPU-bound phases with other units' waits instead of all loading
// at once and then all waiting at once. WithParallelism stays the upper
// bound of units that run; a process never waits while no unit is busy.
// Each wait sends PhaseCPUWait events and adds to Result.CPUWait.
// Without this option nothing waits for a core. A count below 0 is
// refused.
func WithCoreGate(cores int) Option {
	return optionFunc(func(c *config) error {
		if cores < 0 {
			return fmt.Errorf("%w: WithCoreGate(%d): want cores >= 0 (0: the machine's)", ErrBadOption, cores)
		}
		c.coreGate, c.coreGateSet = cores, true
		return nil
	})
}

// WithMemoryBudget bounds the memory the units of a Run use together:
// a unit starts only when the running units' use plus its expected peak
// fit in bytes (see docs/resources.md). A unit's expected peak
// is what its component measured before in the same command class (the
// workdir root's record), else its heaviest class, raised by
// Unit.ExpectedMemory. A unit expected to use more than the whole budget
// runs alone, with a warning naming it.
// WithParallelism stays an upper bound. Without this option the budget
// is read from the machine at each Run: 90 % of the
// memory limit of the host process's cgroup (v2 memory.max, v1
// memory.limit_in_bytes) less the host's own resident memory when there
// is a limit, else 75 % of MemAvailable;
// none where neither can be read. NoMemoryBudget turns it off. A budget
// below 0 other than NoMemoryBudget is refused.
func WithMemoryBudget(bytes int64) Option {
	return optionFunc(func(c *config) error {
		if bytes < 0 && bytes != NoMemoryBudget {
			return fmt.Errorf("%w: WithMemoryBudget(%d): want bytes > 0, 0 for the machine's, or NoMemoryBudget", ErrBadOption, bytes)
		}
		c.memory.budget = bytes
		return nil
	})
}
