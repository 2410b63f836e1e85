package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/journal"
	"github.com/tfisolate/tfisolate/internal/lockinfo"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/reap"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/workdir"
)

// unitRun is one unit's pass through the pipeline:
//
//	generate -> prepare -> modules -> providers -> init -> workspace -> step
//
// Each step is a method that returns what it found (the command step a
// stepOutcome), or records it in the fields of rec it owns; runUnit
// returns both, and buildResult (result.go) makes the unit's Result of
// them.
type unitRun struct {
	rs  *runState
	idx int
	u   *Unit
	id  string
	rec unitRecord

	w    *workdir.Workdir
	dir  string        // where terraform runs: the component inside the workdir
	tree *modtree.Tree // the module tree at dir, walked once per unit
	// sources are the evaluated values of the dynamic module sources
	// (the workdir's Spec.ModuleSources but the directories reached; see
	// moduleSources); unknown says where a dynamic source could not be
	// evaluated.
	sources map[string]string
	unknown []string
	// reached names the directories materialized for sources left to
	// the engine (see moduleSources).
	reached []string
	root    *rootConfig // the root module's configuration, read once per unit (readRootConfig)
	// generated are the files generated into the workdir (the spec's
	// and Generate's), by the names the unit gave them: a saved plan's
	// record keeps a part for each.
	generated map[string][]byte
	out       *unitOutput
	env       map[string]string
	tf        *tfcmd.Process

	user       *cliconfig.File // the CLI config the unit's terraform would read on its own
	userDigest string          // its digest, for the init record

	crashed  []journal.Run    // earlier runs of this instance that never finished
	engines  []journal.Engine // terraform processes this unit started
	tfs      []*tfcmd.Process // every way this unit ran terraform
	unlocked map[string]bool  // state locks this run released as left by them
}

func (x *unitRun) emit(p Phase) {
	x.rs.em.emit(Event{Unit: x.id, Phase: p, Status: Running})
}

// runUnit runs unit i through the pipeline, and returns what its steps
// recorded and the pipeline's outcome (partial when it failed).
func (rs *runState) runUnit(ctx context.Context, i int) (rec unitRecord, out pipelineOutcome, err error) {
	u := &rs.units[i]
	x := &unitRun{rs: rs, idx: i, u: u, id: rs.g.ID(i)}
	x.emit(PhasePrepare)
	spec := u.Workdir
	if u.Generate != nil {
		deps := rs.depResults(i)
		for _, id := range slices.Sorted(maps.Keys(deps)) {
			if errors.Is(deps[id].Err, ErrNotApplied) {
				return x.rec, out, fmt.Errorf("dependency %s: %w", id, deps[id].Err)
			}
		}
		files, err := u.Generate(ctx, deps)
		if err != nil {
			return x.rec, out, fmt.Errorf("%w: %w", ErrGenerate, err)
		}
		spec.Files = maps.Clone(spec.Files)
		if spec.Files == nil {
			spec.Files = map[string][]byte{}
		}
		maps.Copy(spec.Files, files)
	}
	x.moduleSources(&spec)
	x.generated = spec.Files
	t0 := time.Now()
	w, err := rs.cfg.workdirs.Prepare(workdir.WithLockWait(ctx, x.instanceWait), spec)
	if err != nil {
		var le *workdir.LockedError
		if errors.As(err, &le) {
			x.rec.instanceWait, x.rec.instanceLock = time.Since(t0), le.Holder
		}
		return x.rec, out, err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	x.rec.instanceWait, x.rec.instanceLock = w.LockWait, w.Holder
	x.w, x.dir = w, w.Dir

	logFile, err := x.openLog()
	if err != nil {
		return x.rec, out, err
	}
	defer func() { err = errors.Join(err, logFile.Close()) }()
	if x.crashed, err = journal.Begin(w.DataDir, rs.cmd.String(), time.Now()); err != nil {
		return x.rec, out, fmt.Errorf("instance journal: %w", err)
	}
	defer func() {
		if jerr := journal.End(w.DataDir, x.crashed, x.killed(), x.killedSign(), time.Now()); jerr != nil {
			rs.cfg.logger.WarnContext(ctx, "cannot update the instance journal", "unit", x.id, "err", jerr)
		}
	}()
	// What a crashed run left running is waited for, or ended, before
	// anything reads or runs in the workdir.
	if err := x.settleCrashed(ctx, t0); err != nil {
		return x.rec, out, err
	}
	// Runs before the instance lock is released, after terraform is gone.
	defer func() { x.reapUnit(ctx, x.killed() || ctx.Err() != nil) }()
	// An emptied or cut-off local state is never run against as "no state".
	ws := u.Workspace
	if ws == "" {
		ws = defaultWorkspace
	}
	if err := w.CheckState(ws); err != nil {
		return x.rec, out, err
	}
	out, err = x.pipeline(ctx)
	return x.rec, out, err
}

// openLog creates the unit's log file and its output streams.
func (x *unitRun) openLog() (*os.File, error) {
	logPath := filepath.Join(x.w.DataDir, "tfisolate-logs", x.rs.cmd.String()+".log")
	if d := x.rs.opts.logDir; d != "" {
		logPath = filepath.Join(d, logName(x.id, x.rs.cmd.String()))
	}
	f, err := createLog(logPath, x.rs.opts.logDir)
	if err != nil {
		return nil, err
	}
	x.rec.log = logPath
	x.out = newUnitOutput(x.id, x.rs.out, f)
	return f, nil
}

// pipeline runs the unit's steps after the workdir is prepared, and
// returns their outcome (what they found before an error too).
func (x *unitRun) pipeline(ctx context.Context) (out pipelineOutcome, err error) {
	if err := x.checkInputFiles(); err != nil {
		return out, err
	}
	if err := x.refuseUnsavedState(); err != nil {
		return out, err
	}
	switch x.rs.cmd.kind {
	case kindApplyPlan:
		if _, err := x.checkSavedPlan(x.rs.cmd.reverse, false); err != nil {
			return out, err
		}
	case kindExportPlan, kindImportPlan:
		// Files only: no module, provider, init or terraform process.
		x.emit(x.rs.cmd.phase)
		if x.rs.cmd.kind == kindExportPlan {
			return out, x.exportPlan()
		}
		out.cmd, err = x.importPlan()
		return out, err
	}
	x.walk()
	if x.rs.cfg.cache != nil {
		if x.user, x.userDigest, err = x.userCLIConfig(); err != nil {
			return out, fmt.Errorf("read your CLI config: %w", err)
		}
	} else if err := x.missingCLIConfig(); err != nil {
		x.warnCLIConfig(err) // terraform warns too, but in every unit's output
	}
	manifest, err := x.modules(ctx)
	if err != nil {
		return out, err
	}
	cliConfig := ""
	if x.rs.cfg.cache != nil {
		if _, err = x.providers(ctx, manifest); err != nil {
			return out, err
		}
		if cliConfig, err = x.writeCLIConfig(x.user); err != nil {
			return out, err
		}
	}
	if x.env, err = x.engineEnv(cliConfig); err != nil {
		return out, err
	}
	x.tf = x.newTF(x.dir, environ(x.env))
	applying := x.rs.cmd.kind == kindApply
	var inputs string
	if applying {
		inputs = x.inputsDigest()
		same, err := x.unchanged(inputs)
		if err != nil {
			return out, err
		}
		if x.rs.opts.skipUnchanged && same {
			out.unchanged = true
			x.out.note("unchanged since the last successful apply; skipped")
			if x.rs.feeds == nil || !x.rs.feeds[x.idx] {
				return out, nil
			}
			// A dependent's Generate reads its outputs: one terraform
			// output (init only if something it needs changed).
			if out.initSkipped, err = x.initialize(ctx, manifest, false); err != nil {
				return out, err
			}
			if err := x.workspace(ctx); err != nil {
				return out, err
			}
			out.cmd.outputs, err = x.readOutputs(ctx)
			return out, err
		}
	}
	// A record of the last apply's inputs only ever describes state that
	// apply produced: any command that may change state drops it first.
	if applying || x.rs.cmd.kind == kindApplyPlan || x.rs.cmd.kind == kindDestroy || x.rs.cmd.kind == kindStep {
		if err := x.forgetApplied(); err != nil {
			return out, fmt.Errorf("forget the last apply's inputs: %w", err)
		}
	}
	force := x.rs.cmd.kind == kindInit
	if out.initSkipped, err = x.initialize(ctx, manifest, force); err != nil {
		return out, err
	}
	if err := x.workspace(ctx); err != nil {
		return out, err
	}
	out.cmd, err = x.command(ctx)
	if err != nil && out.initSkipped && ctx.Err() == nil && needsInit(err) {
		// The skip was wrong (something init depends on changed in a way
		// the record cannot see): init and try the command once more. The
		// outcome is the retried command's.
		x.out.note("init: terraform asks for init after all; running it and retrying once")
		if out.initSkipped, err = x.initialize(ctx, manifest, true); err != nil {
			return out, err
		}
		out.cmd, err = x.command(ctx)
	}
	if err == nil && applying {
		if rerr := x.recordApplied(inputs); rerr != nil {
			x.out.note("cannot record this apply's inputs: " + rerr.Error())
		}
	}
	return out, err
}

// engineEnv is the environment of the unit's terraform processes
// (unitEnv) with the Run's engine temp dir, inside its private dir,
// unless Unit.Env names one: terraform's and its providers' temp
// files and plugin sockets then never pile up in the user's temp dir
// when a provider is killed; the Run removes the dir, and the next Run
// sweeps it after a crash (sweepRunDirs).
func (x *unitRun) engineEnv(cliConfig string) (map[string]string, error) {
	env := unitEnv(processEnv(), x.w.Env(), cliConfig, x.u.Env)
	splitLogPath(env, x.u.Env, x.id)
	names := []string{"TMPDIR"}
	if runtime.GOOS == "windows" {
		names = []string{"TMP", "TEMP"}
	}
	if slices.ContainsFunc(names, func(k string) bool { _, own := x.u.Env[k]; return own }) {
		return env, nil
	}
	dir, err := x.rs.engineTmp()
	if err != nil {
		return nil, fmt.Errorf("engine temp dir: %w", err)
	}
	for _, k := range names {
		env[k] = dir
	}
	return env, nil
}

// run runs one terraform command that may meet a state lock: retried on
// transient errors, state locks waited out, one line per wait.
func (x *unitRun) run(ctx context.Context, phase Phase, what string, cmd func(lockTimeout string) tfcmd.Cmd) (*tfcmd.Result, error) {
	var out *tfcmd.Result
	err := x.retry(ctx, phase, func() error {
		return x.withStateLock(ctx, what, func(lt string) error {
			c := cmd(lt)
			c.LogFailure = func(err error) bool { return !lockinfo.IsLocked(err) }
			r, err := x.tf.Run(ctx, c)
			out = r
			return err
		})
	})
	return out, err
}

// retry runs fn under the runner's retry policy; each retry is counted,
// logged and sent as an event.
func (x *unitRun) retry(ctx context.Context, phase Phase, fn func() error) error {
	p := x.rs.cfg.retry
	return p.policy().Do(ctx, func(n int, err error, wait time.Duration) {
		x.rec.retries++
		x.out.note(fmt.Sprintf("%s: transient error, retry %d of %d in %s: %s", phase, n, p.Max, wait.Round(time.Millisecond), firstLine(err)))
		x.rs.em.emit(Event{Unit: x.id, Phase: phase, Status: Running, Retry: n, Err: err})
	}, fn)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// workspace selects the unit's workspace, creating it when missing,
// unless it is already selected (terraform records the choice in the
// data dir). An empty Workspace is terraform's "default": a unit once
// run in another workspace must not stay in it.
func (x *unitRun) workspace(ctx context.Context) error {
	ws := x.workspaceName()
	if currentWorkspace(x.w.DataDir) == ws {
		return nil
	}
	_, err := x.run(ctx, PhaseInit, "workspace select", func(string) tfcmd.Cmd { return x.u.Args.workspaceCmd(ws) })
	if err != nil {
		return fmt.Errorf("workspace %q: %w", ws, err)
	}
	if got := currentWorkspace(x.w.DataDir); got != ws {
		return fmt.Errorf("%w: %q asked for, %q selected after workspace select", ErrWorkspace, ws, got)
	}
	return nil
}

// defaultWorkspace is the workspace terraform uses when none is selected.
const defaultWorkspace = "default"

// workspaceName is the unit's workspace: an empty Workspace is
// defaultWorkspace.
func (x *unitRun) workspaceName() string {
	if x.u.Workspace == "" {
		return defaultWorkspace
	}
	return x.u.Workspace
}

// currentWorkspace reads the workspace terraform has selected in dataDir.
func currentWorkspace(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "environment"))
	if err != nil {
		return defaultWorkspace
	}
	return strings.TrimSpace(string(b))
}

// command runs the unit's command proper and returns what it found.
func (x *unitRun) command(ctx context.Context) (stepOutcome, error) {
	c := x.rs.cmd
	a := x.u.Args
	if c.kind != kindInit {
		x.emit(c.phase)
	}
	switch c.kind {
	case kindInit:
		return stepOutcome{}, nil
	case kindPlan:
		r, err := x.run(ctx, PhasePlan, "plan", func(lt string) tfcmd.Cmd { return a.planCmd(lt, false, "") })
		if err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{hasChanges: r.ExitCode == 2, summary: summary(r)}, nil
	case kindSavePlan:
		return x.savePlan(ctx, c.reverse)
	case kindApply:
		r, err := x.run(ctx, PhaseApply, "apply", func(lt string) tfcmd.Cmd { return a.applyCmd(lt) })
		if err != nil {
			return stepOutcome{}, x.keepErroredState(err)
		}
		o := changesOf(r)
		o.outputs, err = x.keepOutputs(ctx, r.Outputs)
		return o, err
	case kindApplyPlan:
		return x.applyPlan(ctx, c.reverse)
	case kindDestroy:
		r, err := x.run(ctx, PhaseDestroy, "destroy", func(lt string) tfcmd.Cmd { return a.destroyCmd(lt) })
		if err != nil {
			return stepOutcome{}, x.keepErroredState(err)
		}
		return changesOf(r), nil
	case kindValidate:
		_, err := x.tf.Run(ctx, x.u.Args.validateCmd())
		return stepOutcome{}, err
	case kindOutput:
		outs, err := x.readOutputs(ctx)
		return stepOutcome{outputs: outs}, err
	case kindStep:
		return x.step(ctx)
	case kindForceUnlock:
		_, err := x.tf.Run(ctx, tfcmd.ForceUnlock(c.lockID))
		return stepOutcome{}, err
	case kindPushErroredState:
		return stepOutcome{}, x.pushErroredStates(ctx)
	}
	return stepOutcome{}, fmt.Errorf("%w: %s", ErrUnknownCommand, c)
}

// changesOf is what an apply-like command did, from terraform's change
// summary (none when it gave none).
func changesOf(r *tfcmd.Result) stepOutcome {
	if s := summary(r); s != nil {
		return stepOutcome{summary: s, hasChanges: s.Total() > 0}
	}
	return stepOutcome{}
}

// step runs a custom command's function with a Handle; its outcome is
// what the function recorded (Handle.Record), failed or not.
func (x *unitRun) step(ctx context.Context) (stepOutcome, error) {
	tf, err := tfexec.NewTerraform(x.dir, x.rs.eng.Path)
	if err != nil {
		return stepOutcome{}, fmt.Errorf("%w: %w", ErrNoTerraform, err)
	}
	if err := tfexecEnv(tf, x.env); err != nil {
		return stepOutcome{}, fmt.Errorf("terraform environment: %w", err)
	}
	// stdout is the caller's alone (terraform-exec captures it for what
	// it returns): show and output print state and sensitive values in
	// clear. Only stderr, terraform's diagnostics, goes to the unit's log.
	stderr := x.out.stream()
	defer stderr.flush()
	tf.SetStderr(stderr)
	if err := tf.SetWaitDelay(x.rs.cfg.grace); err != nil {
		x.rs.cfg.logger.WarnContext(ctx, "no graceful interrupt on this platform", "unit", x.id, "err", err)
	}
	log := x.out.stream()
	defer log.flush()
	// A Stop's kill reaches terraform-exec's processes too: they are not
	// the runner's to signal one by one, so the unit's are found by its
	// TF_DATA_DIR (a scan of the host's processes, only at a kill).
	stepDone := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() {
		select {
		case <-x.rs.kill:
			ps := reap.Scan(x.w.DataDir)
			defer reap.Close(ps)
			for _, p := range reap.Kill(ps) {
				x.out.note("killed at a stop's kill: " + p.String())
			}
		case <-stepDone:
		}
	})
	defer func() { close(stepDone); killer.Wait() }()
	h := newHandle(x, tf, log)
	defer h.close()
	if err := x.rs.cmd.step(ctx, h); err != nil {
		return stepOutcome{data: h.data}, fmt.Errorf("step %s: %w", x.rs.cmd, err)
	}
	return stepOutcome{data: h.data}, nil
}
