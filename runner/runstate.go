package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/admission"
	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/flight"
	"github.com/tfisolate/tfisolate/internal/modinstall"
	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/internal/queue"
	"github.com/tfisolate/tfisolate/internal/store"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// runState is what the units of one Run share.
type runState struct {
	cfg   *config
	opts  *runConfig // this Run's choices
	cmd   Command
	eng   engine.Info
	units []Unit
	g     *queue.Graph

	results []Result // results[i] is built (buildResult) from parts[i] when unit i is queued and when it is done
	// parts[i] is written by unit i's goroutine and its done hook, then
	// read by its dependents (depResults).
	parts []resultParts
	// depOutputs holds, when the command does not produce outputs in
	// dependency order, the outputs read before it of the units a
	// Generate depends on (see depoutputs.go).
	depOutputs map[int]Result
	// feeds[i]: unit i's outputs are given to a Generate in this Run.
	feeds []bool
	// cliConfigWarning says once per Run that parts of the user's CLI
	// config were left out.
	cliConfigWarning sync.Once
	warnMu           sync.Mutex
	warnings         []string // Report.Warnings
	// fallbacks holds the provider fallbacks already warned about in
	// this Run (by their message), under warnMu: each is said once
	// however many units' installs it served.
	fallbacks map[string]bool
	// ordered forces dependency order (the Output pass ignores
	// WithIgnoreDependencyOrder, or it could not feed a Generate).
	ordered bool
	// outsideOutputs marks the Output pass over dependencies outside the
	// selection: a unit there whose state holds none of the outputs its
	// configuration declares has not been applied (ErrNotApplied).
	outsideOutputs []bool
	// plannedOutputs marks the Output pass before a Plan or SavePlan
	// over dependencies that this Run plans: one whose state holds none
	// of the outputs its configuration declares has never been applied,
	// and its outputs are not known until it is (ErrNotApplied), so its
	// dependents are not planned against an empty map.
	plannedOutputs []bool
	em             *emitter
	out            *combined
	mem            *admission.Memory // the memory budget, and each unit's measured memory
	cpu            *admission.Cores  // WithCoreGate's share of the cores; nil without it

	tmp     string // this Run's private dir: CLI config, module snapshots
	tmpLock *flock.Flock
	// engineTmp makes, with the first unit that needs it, the temp dir
	// every terraform process of the Run and its providers get (inside
	// tmp, see engineEnv): one mkdir per Run, not per unit (a directory
	// created is about 0.4 ms of CPU on ext4, measured).
	engineTmp func() (string, error)
	kill      <-chan struct{}
	// host interrupts this Run's terraform processes if the host dies:
	// one watcher for them all, started with the first.
	host tfcmd.HostWatch
	// follow wakes the copies of this Run's engine output as it is
	// written: one inotify instance for them all.
	follow tfcmd.Follower
	// share sizes each terraform's Go runtime to its share of the cores
	// among this Run's running terraform processes.
	share *tfcmd.CoreShare

	// dynamic holds, by component source dir, whether its root module
	// has a module source that is an expression: read once per Run.
	dynamic sync.Map

	modStore   *modstore.Store                   // remote modules across processes; nil: once per Run
	flights    flight.Group[setup]               // provider setup, once per requirement set
	modFlights flight.Group[modinstall.Snapshot] // remote modules, once per module key
}

// runDirPrefix names the private dirs of Runs in the temp dir; a Run
// holds a flock on its dir's runDirLock file, so dirs whose lock is free belong
// to runners that died, and the next Run removes them.
const (
	runDirPrefix = "tfisolate-run-"
	runDirLock   = ".lock"
)

func (r *Runner) newRunState(cmd Command, rc *runConfig, eng engine.Info, units []Unit, g *queue.Graph) (*runState, error) {
	sweepRunDirs(r.cfg.logger)
	tmp, lk, err := store.LockedTempDir(runDirPrefix, runDirLock)
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	rs := &runState{cfg: &r.cfg, opts: rc, cmd: cmd, eng: eng, units: units, g: g, tmp: tmp, tmpLock: lk,
		results: make([]Result, len(units)), parts: make([]resultParts, len(units)), em: &emitter{fn: rc.events, engine: publicEngine(eng)},
		share: tfcmd.NewCoreShare(runtime.GOMAXPROCS(0))}
	// Short: a plugin's socket path must fit in 108 bytes.
	rs.engineTmp = sync.OnceValues(func() (string, error) {
		d := filepath.Join(tmp, "t")
		return d, os.Mkdir(d, 0o700)
	})
	if r.cfg.output != nil {
		rs.out = &combined{w: r.cfg.output}
	}
	rs.cpu = rs.newCPUGate()
	rs.mem = rs.newMemGate()
	if err := rs.mem.Newer(); err != nil {
		// A newer release's memory record: this Run schedules without
		// it and leaves it as it is (invariant 22), and says so once.
		rs.warn("memory record not used, and left as it is: " + err.Error())
	}
	if rc.stop != nil {
		rs.kill = rc.stop.Killing()
	}
	if rs.modStore, err = r.cfg.openModuleStore(); err != nil {
		rs.close()
		return nil, fmt.Errorf("open module store: %w", err)
	}
	return rs, nil
}

func (rs *runState) close() {
	rs.host.Close()
	rs.follow.Close()
	err := errors.Join(os.RemoveAll(rs.tmp), rs.tmpLock.Unlock())
	if err != nil {
		rs.cfg.logger.Warn("cannot remove run dir", "dir", rs.tmp, "err", err)
	}
}

// sweepRunDirs removes the private dirs of Runs whose process is gone
// (their flock is free), and the working dirs of engine detections whose
// process died mid-run (engine.DetectDirPrefix, same rule). A dir without
// a lock file is only removed when it is old enough that its Run cannot
// still be starting.
func sweepRunDirs(log interface{ Debug(string, ...any) }) {
	runs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	detects, _ := filepath.Glob(filepath.Join(os.TempDir(), engine.DetectDirPrefix+"*"))
	// A staging dir (store.LockedTempDir) is only ever a moment old unless
	// its process died before naming it.
	staging, _ := filepath.Glob(filepath.Join(os.TempDir(), store.StagingPrefix+"*"))
	for _, d := range staging {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
			_ = os.RemoveAll(d)
		}
	}
	for _, d := range append(runs, detects...) {
		lp := filepath.Join(d, runDirLock)
		if strings.HasPrefix(filepath.Base(d), engine.DetectDirPrefix) {
			lp = filepath.Join(d, engine.DetectDirLock)
		}
		if _, err := os.Stat(lp); errors.Is(err, os.ErrNotExist) {
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
				_ = os.RemoveAll(d)
			}
			continue
		}
		lk := flock.New(lp)
		if ok, err := lk.TryLock(); err == nil && ok {
			log.Debug("removing the run dir of a runner that is gone", "dir", d)
			_ = os.RemoveAll(d)
			_ = lk.Unlock()
		}
	}
}

// emitter serializes event delivery so callbacks never run concurrently,
// and stamps each event with its time and the Run's engine.
type emitter struct {
	mu     sync.Mutex
	fn     func(Event)
	engine Engine
}

func (e *emitter) emit(ev Event) {
	if e.fn == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Time, ev.Engine = time.Now(), e.engine
	e.fn(ev)
}

// run runs the selected units through the queue and returns their
// results in the units' order.
func (rs *runState) run(ctx context.Context, sel []bool) []Result {
	order := make([]int, 0, len(rs.units))
	for i := range rs.units {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(rs.g.ID(a), rs.g.ID(b)) })
	for _, i := range order {
		if sel[i] {
			rs.parts[i] = resultParts{unit: rs.g.ID(i)}
			rs.results[i] = buildResult(rs.parts[i])
			rs.em.emit(Event{Unit: rs.g.ID(i), Phase: PhaseQueued, Status: Queued})
		}
	}
	// A Stop's second request interrupts running units like a cancelled
	// context; its first only drains the queue.
	var watcher sync.WaitGroup
	defer watcher.Wait()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var drain <-chan struct{}
	if s := rs.opts.stop; s != nil {
		drain = s.Draining()
		watcher.Add(1)
		go func() {
			defer watcher.Done()
			select {
			case <-s.Interrupting():
				cancel(ErrInterrupted)
			case <-runCtx.Done():
			}
		}()
	}
	policy := rs.opts.policy(rs.cmd)
	if rs.ordered {
		policy.IgnoreOrder = false
	}
	if rs.mem.Budget() > 0 {
		policy.Admit = rs.mem.Admit
	}
	defer rs.mem.Save()
	rs.g.Run(runCtx, sel, policy, drain,
		func(ctx context.Context, i int) error {
			p := &rs.parts[i]
			start := time.Now()
			mem, err := rs.runMeasured(ctx, i, func(ctx context.Context, i int) (err error) {
				p.rec, p.out, err = rs.runUnitSafely(ctx, i)
				return err
			})
			p.mem, p.start, p.duration, p.cpuWait = mem, start, time.Since(start), rs.cpu.Waited(i)
			return err
		},
		func(i int, o queue.Outcome) {
			rs.parts[i].done = &o
			res := buildResult(rs.parts[i])
			rs.results[i] = res
			rs.em.emit(Event{Unit: res.Unit, Phase: PhaseDone, Status: res.Status, Err: res.Err})
		})
	out := make([]Result, 0, len(rs.units))
	for i := range rs.units {
		if sel[i] {
			out = append(out, rs.results[i])
		}
	}
	return out
}

// warn adds a warning about the whole Run to its report.
func (rs *runState) warn(msg string) {
	rs.warnMu.Lock()
	defer rs.warnMu.Unlock()
	rs.warnings = append(rs.warnings, msg)
}

// runUnitSafely is runUnit with a panic (in the SDK, a dependency or the
// caller's Generate) turned into the unit's error: one unit's input never
// ends the host with every other unit's result. runUnit's deferred work
// (the instance lock, the journal, leftover processes) still runs, since
// the panic unwinds through it.
func (rs *runState) runUnitSafely(ctx context.Context, i int) (rec unitRecord, out pipelineOutcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrPanic, r, debug.Stack())
		}
	}()
	return rs.runUnit(ctx, i)
}

// outcome turns the queue's outcome into a Result's status, error and
// Started. A unit that never started is Skipped whatever kept it from
// starting, with the cause in its error (which wraps ErrSkipped): a failed
// dependency, fail-fast, a Stop, or the Run's context ending (the queue
// calls that last one Canceled; Canceled is kept for a unit that started
// and was interrupted).
func outcome(o queue.Outcome) (Status, error, bool) {
	if !o.Started && o.Status == queue.Canceled {
		return Skipped, fmt.Errorf("%w: %w", ErrSkipped, o.Err), false
	}
	return status(o.Status), o.Err, o.Started
}

func status(s queue.Status) Status {
	switch s {
	case queue.Succeeded:
		return Succeeded
	case queue.Failed:
		return Failed
	case queue.Skipped:
		return Skipped
	case queue.Canceled:
		return Canceled
	}
	return Failed
}

// depResults returns the results of the units unit i depends on. The
// queue calls a unit only after the done hook of each unit it waits for
// returned. A dependency that ran before the unit in this Run gives its
// Result; where the command does not produce outputs in dependency order,
// its outputs are those the Run read before the command (depOutputs).
func (rs *runState) depResults(i int) map[string]Result {
	out := map[string]Result{}
	inOrder := !rs.cmd.reverse && (!rs.opts.ignoreOrder || rs.ordered)
	for _, d := range rs.g.Deps(i) {
		pre, read := rs.depOutputs[d]
		ran := inOrder && (rs.results[d].Started || rs.results[d].Status != Queued)
		switch {
		case read && errors.Is(pre.Err, ErrNotApplied):
			// Its outputs are not known (plannedOutputs): the dependent
			// fails naming it, whatever the command did with it.
			out[rs.g.ID(d)] = pre
		case ran && read:
			p := rs.parts[d]
			p.given = pre.Outputs
			out[rs.g.ID(d)] = buildResult(p)
		case ran:
			out[rs.g.ID(d)] = rs.results[d]
		case read:
			out[rs.g.ID(d)] = pre
		}
	}
	return out
}
