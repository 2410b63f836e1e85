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
	flights flights[setup]
	// modFlights fetches remote modules once per module key.
	modFlights flights[modSnapshot]
}

func (r *Runner) newRunState() (*runState, error) {
	tmp, err := os.MkdirTemp("", "tfisolate-run-")
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	rs := &runState{r: r, tmp: tmp}
	rs.modFlights.kind = ErrModules
	if r.output != nil {
		rs.out = &combined{w: r.output}
	}
	return rs, nil
}

func (rs *runState) close() error { return os.RemoveAll(rs.tmp) }

// unitRun is one unit's real execution.
type unitRun struct {
	r              *Runner
	rs             *runState
	j              *job
	res            *Result
	out            *unitOutput
	stdout, stderr *lineWriter
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
	x.stdout, x.stderr = x.out.stream(), x.out.stream()
	defer x.stdout.flush()
	defer x.stderr.flush()
	// Runs before the instance lock is released, after terraform is gone.
	defer func() {
		for _, p := range reapLeftovers(w.DataDir) {
			x.out.note("killed leftover process " + p)
			r.logger.WarnContext(ctx, "killed leftover process", "unit", j.res.Unit, "process", p)
		}
	}()

	j.emit(PhaseInit)
	// Remote modules first: the providers they require are only known
	// once they are on disk.
	manifest, err := x.modules(ctx, w)
	if err != nil {
		return err
	}
	cliConfig := ""
	if r.cache != nil {
		if cliConfig, err = x.providers(ctx, w.Dir, manifest); err != nil {
			return err
		}
	}
	tf, err := x.terraform(ctx, w.Dir, unitEnv(w.Env(), cliConfig))
	if err != nil {
		return err
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

// providers discovers the unit's provider requirements (with the remote
// modules its manifest records, if any), gets the lock file from the
// singleflight leader for that requirement set and writes it into the
// workdir. It returns the path of the CLI config the leader wrote.
func (x *unitRun) providers(ctx context.Context, dir, manifest string) (string, error) {
	reqs, err := discover(dir, manifest)
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

// terraform returns a new *tfexec.Terraform for one command sequence of
// the unit (instances are not safe to share), writing to the unit's output.
func (x *unitRun) terraform(ctx context.Context, dir string, env map[string]string) (*tfexec.Terraform, error) {
	tf, err := tfexec.NewTerraform(dir, x.r.tfPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTerraform, err)
	}
	if err := tf.SetEnv(env); err != nil {
		return nil, fmt.Errorf("terraform environment: %w", err)
	}
	tf.SetStdout(x.stdout)
	tf.SetStderr(x.stderr)
	if err := tf.SetWaitDelay(x.r.grace); err != nil {
		x.r.logger.WarnContext(ctx, "no graceful interrupt on this platform", "unit", x.res.Unit, "err", err)
	}
	return tf, nil
}

// writeCLIConfig writes the cache's terraform CLI config as it is now
// (it lists the providers the cache holds, so write it after Ensure) and
// returns its path.
func (rs *runState) writeCLIConfig() (string, error) {
	f, err := os.CreateTemp(rs.tmp, "cli-*.tfrc")
	if err != nil {
		return "", fmt.Errorf("write CLI config: %w", err)
	}
	_, werr := f.Write(rs.r.cache.CLIConfig())
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", fmt.Errorf("write CLI config: %w", err)
	}
	return f.Name(), nil
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
	var err error
	st.cliConfig, err = rs.writeCLIConfig()
	return st, err
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
