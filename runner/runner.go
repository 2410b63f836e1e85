package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/queue"
)

// Runner runs commands over units. A Runner is safe for concurrent use;
// each Run is independent.
type Runner struct {
	cfg config

	mu  sync.Mutex
	eng *engine.Info // found and detected by the first Run that needed it
}

// New returns a Runner. WithWorkdirs is required. New does no I/O: the
// terraform binary is found by the first Run, under its context (see
// WithTerraform and WithFinder), and Binary says which one it is.
func New(opts ...Option) (*Runner, error) {
	cfg := config{
		run:         runConfig{parallelism: DefaultParallelism},
		lockTimeout: DefaultLockTimeout,
		grace:       DefaultInterruptGrace,
		crashWait:   DefaultCrashedEngineWait,
		retry:       DefaultRetry,
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrBadOption)
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.workdirs == nil {
		return nil, fmt.Errorf("%w: WithWorkdirs is required", ErrBadOption)
	}
	return &Runner{cfg: cfg}, nil
}

// Binary finds the terraform (or tofu) executable the runner uses, runs
// its version command once, and says which engine and version it is.
// The result is kept for later Runs; a failure is not, so the next call
// tries again.
func (r *Runner) Binary(ctx context.Context) (Engine, error) {
	if ctx == nil {
		return Engine{}, ErrNilContext
	}
	if err := r.usable(); err != nil {
		return Engine{}, err
	}
	info, err := r.engine(ctx)
	if err != nil {
		return Engine{}, err
	}
	return publicEngine(info), nil
}

func publicEngine(i engine.Info) Engine {
	return Engine{Kind: string(i.Kind), Version: i.Version.String(), Path: i.Path}
}

func (r *Runner) engine(ctx context.Context) (engine.Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.eng != nil {
		return *r.eng, nil
	}
	path := r.cfg.tfPath
	if path == "" {
		find := r.cfg.finder
		if find == nil {
			find = defaultFinder
		}
		p, err := find(ctx)
		if err != nil {
			return engine.Info{}, fmt.Errorf("%w: %w", ErrNoTerraform, err)
		}
		path = p
	}
	info, err := engine.Detect(ctx, path)
	if err != nil {
		return engine.Info{}, fmt.Errorf("%w: %s: %w", ErrNoTerraform, path, err)
	}
	r.eng = &info
	return info, nil
}

// defaultFinder looks for terraform on PATH, then installs a pinned
// release under the user cache dir.
func defaultFinder(ctx context.Context) (string, error) {
	return engine.Find(ctx, engine.Terraform, defaultInstallDir())
}

// defaultInstallDir is where the runner installs terraform when none is
// on PATH: USERCACHE/tfisolate/terraform, created 0700 and refused if
// someone else owns or can write it (engine.ErrUnsafeInstallDir); "" when
// the platform names no user cache dir.
func defaultInstallDir() string {
	c, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(c, "tfisolate", "terraform")
}

// Run runs cmd over units with the Runner's defaults for every per-Run
// choice; it is RunWith(ctx, cmd, units).
func (r *Runner) Run(ctx context.Context, cmd Command, units ...Unit) (*Report, error) {
	return r.RunWith(ctx, cmd, units)
}

// RunWith validates the units and runs cmd over the selected ones, in
// dependency order (reversed for destroy commands), at most the Run's
// parallelism at once, each unit starting as soon as the units it depends
// on are done. opts are this Run's choices (filters, exact IDs, shard,
// Stop, skip-unchanged, log dir, events, failure policy, parallelism);
// each wins over the same choice given to New, which applies otherwise.
// Invalid input (a nil context, an invalid command, unit, option or
// filter): nothing runs, the report is nil and the error says why.
// Otherwise the report has one result per selected unit, and the error is
// report.Err(): non-nil when any unit failed, was canceled or never
// started because the Run was stopped. RunWith returns only after every
// goroutine and terraform process it started has ended.
func (r *Runner) RunWith(ctx context.Context, cmd Command, units []Unit, opts ...RunOption) (*Report, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	if err := r.usable(); err != nil {
		return nil, err
	}
	rc, err := r.cfg.run.forCall(opts)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, cmd, units, &rc)
}

func (r *Runner) run(ctx context.Context, cmd Command, units []Unit, rc *runConfig) (*Report, error) {
	start := time.Now()
	rs, sel, err := r.startRun(ctx, cmd, units, rc)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	if err := r.readDependencyOutputs(ctx, rs, sel); err != nil {
		return nil, err
	}
	rs.feeds = rs.feedsGenerate(sel)
	rep := &Report{Command: cmd.String(), Engine: publicEngine(rs.eng)}
	rep.Results = rs.run(ctx, sel)
	rep.Warnings = rs.warnings // every unit is done: no more writers
	rep.Duration = time.Since(start)
	return rep, rep.Err()
}

// startRun checks cmd and units, selects the units rc selects, finds the
// engine and sets up the Run's state: what Run and DryRun both do first.
// The caller closes the state.
func (r *Runner) startRun(ctx context.Context, cmd Command, units []Unit, rc *runConfig) (*runState, []bool, error) {
	if err := cmd.valid(); err != nil {
		return nil, nil, err
	}
	g, sel, err := rc.selection(units)
	if err != nil {
		return nil, nil, err
	}
	if err := r.checkUnits(units, sel); err != nil {
		return nil, nil, err
	}
	eng, err := r.engine(ctx)
	if err != nil {
		return nil, nil, err
	}
	rs, err := r.newRunState(cmd, rc, eng, forEngine(units, eng), g)
	if err != nil {
		return nil, nil, err
	}
	return rs, sel, nil
}

// usable refuses a nil or zero Runner (one not made by New): it has no
// workdirs to run in.
func (r *Runner) usable() error {
	if r == nil || r.cfg.workdirs == nil {
		return fmt.Errorf("%w: a nil or zero Runner; make one with New(WithWorkdirs(...))", ErrBadOption)
	}
	return nil
}

// Order is a dry run: it validates the units and returns the order cmd
// would run the selected ones in, as waves. Each wave holds sorted unit
// IDs that depend only on units of earlier waves; with
// WithIgnoreDependencyOrder everything is one wave. Nothing is executed
// and nothing is written. It is OrderWith(cmd, units).
func (r *Runner) Order(cmd Command, units ...Unit) ([][]string, error) {
	return r.OrderWith(cmd, units)
}

// OrderWith is Order under the per-Run choices opts, as RunWith would
// take them.
func (r *Runner) OrderWith(cmd Command, units []Unit, opts ...RunOption) ([][]string, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	rc, err := r.cfg.run.forCall(opts)
	if err != nil {
		return nil, err
	}
	if err := cmd.valid(); err != nil {
		return nil, err
	}
	g, sel, err := rc.selection(units)
	if err != nil {
		return nil, err
	}
	return g.Waves(sel, rc.policy(cmd)), nil
}

// checkUnits validates every selected unit's workdir spec, arguments and
// Env before anything starts, and refuses two units of one instance.
func (r *Runner) checkUnits(units []Unit, sel []bool) error {
	byWorkdir := map[string]string{}
	for i := range units {
		if !sel[i] {
			continue
		}
		u := &units[i]
		id := u.id()
		wid, err := r.cfg.workdirs.Check(u.Workdir)
		if err != nil {
			return fmt.Errorf("%w: unit %s: %w", ErrInvalidUnit, id, err)
		}
		if other, dup := byWorkdir[wid]; dup {
			return fmt.Errorf("%w: units %s and %s are the same instance (stack %q, instance %q)", ErrInvalidUnit, other, id, u.Workdir.Stack, u.Workdir.Instance)
		}
		byWorkdir[wid] = id
		if err := checkArgs(id, u.Args); err != nil {
			return err
		}
		if err := checkEnv(id, u.Env); err != nil {
			return err
		}
		if u.ExpectedMemory < 0 {
			return fmt.Errorf("%w: unit %s: ExpectedMemory %d is negative", ErrInvalidUnit, id, u.ExpectedMemory)
		}
	}
	return nil
}

// ForceUnlock releases the state lock with the given ID for unit u, the
// way `terraform force-unlock` does, with everything a Run gives a unit:
// its workdir is prepared under the instance lock, init and the
// workspace are as for any command. Filters and shards do not apply. Use
// it on a lock a crashed run left behind (ErrStateLocked names the ID);
// releasing a lock a live run still holds lets two runs write the state.
func (r *Runner) ForceUnlock(ctx context.Context, u Unit, lockID string) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := r.usable(); err != nil {
		return err
	}
	if lockID == "" {
		return fmt.Errorf("%w: ForceUnlock with an empty lock ID", ErrBadOption)
	}
	// The Runner's log dir, events and Stop apply; no selection or
	// failure policy does: the one unit runs, alone.
	rc := r.cfg.run
	rc.filter, rc.ids, rc.dependents, rc.shardIndex, rc.shardCount = queue.Filter{}, nil, false, 0, 0
	rc.failFast, rc.ignoreErrors, rc.ignoreOrder, rc.skipUnchanged = false, false, true, false
	u.DependsOn = nil
	_, err := r.run(ctx, Command{name: "force-unlock", kind: kindForceUnlock, phase: PhaseStep, lockID: lockID}, []Unit{u}, &rc)
	return err
}
