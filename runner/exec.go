package runner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// runState is what the units of one Run share.
type runState struct {
	r       *Runner
	tmp     string // CLI config files for this run
	out     *combined
	flights flights
}

func (r *Runner) newRunState() (*runState, error) {
	tmp, err := os.MkdirTemp("", "tfisolate-run-")
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	rs := &runState{r: r, tmp: tmp}
	if r.output != nil {
		rs.out = &combined{w: r.output}
	}
	return rs, nil
}

func (rs *runState) close() error { return os.RemoveAll(rs.tmp) }

// unitRun is one unit's real execution.
type unitRun struct {
	r   *Runner
	rs  *runState
	j   *job
	res *Result
	out *unitOutput
}

// runUnit prepares the unit's workdir (taking the instance lock), sets up
// its providers through the singleflight leader, runs terraform init, selects
// the workspace and runs the command.
func (rs *runState) runUnit(ctx context.Context, j *job) (err error) {
	r := rs.r
	x := &unitRun{r: r, rs: rs, j: j, res: j.res}
	t0 := time.Now()
	w, err := r.workdirs.Prepare(ctx, j.unit.Workdir)
	if err != nil {
		if errors.Is(err, workdir.ErrLocked) {
			x.res.LockWait += time.Since(t0)
		}
		return err
	}
	x.res.LockWait += w.LockWait
	defer func() { err = errors.Join(err, w.Close()) }()

	logPath := filepath.Join(w.DataDir, "tfisolate-logs", j.cmd.String()+".log")
	if r.logDir != "" {
		logPath = filepath.Join(r.logDir, url.PathEscape(j.res.Unit)+".log")
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	defer func() { err = errors.Join(err, logFile.Close()) }()
	x.res.Log = logPath
	x.out = newUnitOutput(j.res.Unit, rs.out, logFile)
	stdout, stderr := x.out.stream(), x.out.stream()
	defer stdout.flush()
	defer stderr.flush()
	// Runs before the instance lock is released, after terraform is gone.
	defer func() {
		for _, p := range reapLeftovers(w.DataDir) {
			x.out.note("killed leftover process " + p)
			r.logger.WarnContext(ctx, "killed leftover process", "unit", j.res.Unit, "process", p)
		}
	}()

	j.emit(PhaseInit)
	cliConfig := ""
	if r.cache != nil {
		if cliConfig, err = x.providers(ctx, w.Dir); err != nil {
			return err
		}
	}
	tf, err := tfexec.NewTerraform(w.Dir, r.tfPath)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoTerraform, err)
	}
	if err := tf.SetEnv(unitEnv(w.Env(), cliConfig)); err != nil {
		return fmt.Errorf("terraform environment: %w", err)
	}
	tf.SetStdout(stdout)
	tf.SetStderr(stderr)
	if err := tf.SetWaitDelay(r.grace); err != nil {
		r.logger.WarnContext(ctx, "no graceful interrupt on this platform", "unit", j.res.Unit, "err", err)
	}
	// terraform init takes no -lock-timeout since 0.15; it does not lock
	// the state unless it migrates it.
	if err := tf.Init(ctx, tfexec.Upgrade(false)); err != nil {
		return fmt.Errorf("terraform init: %w", err)
	}
	if ws := j.unit.Workspace; ws != "" {
		if err := x.workspace(ctx, tf, ws); err != nil {
			return err
		}
	}
	switch j.cmd {
	case Plan:
		j.emit(PhasePlan)
		err = x.withStateLock(ctx, "plan", func(lt string) error {
			changes, err := tf.Plan(ctx, tfexec.LockTimeout(lt))
			x.res.HasChanges = changes
			return err
		})
	case Apply:
		j.emit(PhaseApply)
		err = x.withStateLock(ctx, "apply", func(lt string) error {
			return tf.Apply(ctx, tfexec.LockTimeout(lt))
		})
	case Destroy:
		j.emit(PhaseDestroy)
		err = x.withStateLock(ctx, "destroy", func(lt string) error {
			return tf.Destroy(ctx, tfexec.LockTimeout(lt))
		})
	}
	if err != nil {
		return fmt.Errorf("terraform %s: %w", j.cmd, err)
	}
	return nil
}

// providers discovers the unit's provider requirements, gets the lock file
// and CLI config from the singleflight leader for that requirement set,
// writes the lock file into the workdir, and returns the CLI config path.
func (x *unitRun) providers(ctx context.Context, dir string) (string, error) {
	reqs, err := discover(dir)
	if err != nil {
		return "", fmt.Errorf("discover providers: %w", err)
	}
	st, leader, err := x.rs.flights.do(ctx, requirementsKey(reqs), x.res.Unit, func() (setup, error) {
		return x.rs.setup(ctx, reqs)
	})
	if err != nil {
		return "", err
	}
	if leader {
		x.out.note(fmt.Sprintf("providers: set up %d requirement(s) in the shared cache", len(reqs)))
	}
	if len(reqs) > 0 {
		if err := atomicfile.WriteFile(filepath.Join(dir, lockFileName), st.lockFile, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", lockFileName, err)
		}
	}
	return st.cliConfig, nil
}

// setup is the leader's work for one requirement set.
func (rs *runState) setup(ctx context.Context, reqs []pluginc.Requirement) (setup, error) {
	var st setup
	if len(reqs) > 0 {
		pkgs, err := rs.r.cache.Ensure(ctx, reqs...)
		if err != nil {
			return st, err
		}
		st.lockFile = pluginc.LockFile(pkgs)
	}
	f, err := os.CreateTemp(rs.tmp, "cli-*.tfrc")
	if err != nil {
		return st, fmt.Errorf("write CLI config: %w", err)
	}
	_, werr := f.Write(rs.r.cache.CLIConfig())
	if err := errors.Join(werr, f.Close()); err != nil {
		return st, fmt.Errorf("write CLI config: %w", err)
	}
	st.cliConfig = f.Name()
	return st, nil
}

// workspace selects ws, creating it when missing.
func (x *unitRun) workspace(ctx context.Context, tf *tfexec.Terraform, ws string) error {
	list, current, err := tf.WorkspaceList(ctx)
	if err != nil {
		return fmt.Errorf("list workspaces: %w", err)
	}
	switch {
	case current == ws:
		return nil
	case slices.Contains(list, ws):
		err = tf.WorkspaceSelect(ctx, ws)
	default:
		err = x.withStateLock(ctx, "workspace new", func(lt string) error {
			return tf.WorkspaceNew(ctx, ws, tfexec.LockTimeout(lt))
		})
	}
	if err != nil {
		return fmt.Errorf("workspace %q: %w", ws, err)
	}
	return nil
}
