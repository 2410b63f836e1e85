//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/workdir"
)

// TestStepStateList runs a custom step over two applied units (app
// depends on vpc) that lists each one's resources from `terraform show`
// into Result.Data. Inside the step: the instance lock is held (a Prepare
// of the same instance gives up with ErrLocked), WithStateLock runs a
// locking command, and app's Handle has vpc's result.
func TestStepStateList(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "plan", planComponent)
	states := filepath.Join(w.dir, "states")
	units := []Unit{
		{ID: "vpc", Workdir: workdirSpec("plat-ue2-dev", "vpc", src, files(t, map[string]any{"name": "vpc"}, filepath.Join(states, "vpc.tfstate")))},
		{ID: "app", DependsOn: []string{"vpc"}, Workdir: workdirSpec("plat-ue2-dev", "app", src, files(t, map[string]any{"name": "app"}, filepath.Join(states, "app.tfstate")))},
	}
	_, err := w.runner(t).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)

	var mu sync.Mutex
	deps := map[string]map[string]Result{}
	lockTimeouts := map[string]string{}
	step := Step("state-list", func(ctx context.Context, h *Handle) error {
		// The instance is locked for the step's whole duration.
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if wd, err := w.wd.Prepare(pctx, h.Unit.Workdir); err == nil {
			_ = wd.Close()
			return errors.New("a concurrent Prepare got the instance while the step ran")
		} else if !errors.Is(err, workdir.ErrLocked) {
			return fmt.Errorf("concurrent Prepare: want ErrLocked, got %w", err)
		}

		err := h.WithStateLock(ctx, "refresh", func(lt string) error {
			mu.Lock()
			lockTimeouts[h.ID] = lt
			mu.Unlock()
			return h.Terraform.Refresh(ctx, tfexec.LockTimeout(lt))
		})
		if err != nil {
			return err
		}
		st, err := h.Terraform.Show(ctx)
		if err != nil {
			return err
		}
		var addrs []string
		if st.Values != nil && st.Values.RootModule != nil {
			for _, r := range st.Values.RootModule.Resources {
				addrs = append(addrs, r.Address)
			}
		}
		slices.Sort(addrs)
		h.Record(addrs)
		fmt.Fprintf(h.Log, "listed %d resources of %s\n", len(addrs), h.ID)
		mu.Lock()
		deps[h.ID] = h.Dependencies()
		mu.Unlock()
		return nil
	})
	rec := &recorder{}
	rep, err := w.runner(t, WithEvents(rec.add)).Run(testCtx(t), step, units...)
	require.NoError(t, err)
	require.Equal(t, "state-list", rep.Command)
	want := []string{"terraform_data.meta", "tfitest_item.this"}
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		require.Equal(t, want, res.Data, res.Unit)
		require.GreaterOrEqual(t, rec.index(res.Unit, PhaseStep), 0, "no step event for %s", res.Unit)
		require.Contains(t, readFile(t, res.Log), fmt.Sprintf("listed 2 resources of %s\n", res.Unit))
		require.NotEmpty(t, lockTimeouts[res.Unit], "WithStateLock gave no lock timeout")
		// Data is in the JSON form.
		b, err := json.Marshal(res)
		require.NoError(t, err)
		require.Contains(t, string(b), `"data":["terraform_data.meta","tfitest_item.this"]`)
	}
	require.Less(t, rec.index("vpc", PhaseDone), rec.index("app", PhaseStep), "dependency order")
	require.Empty(t, deps["vpc"])
	require.Len(t, deps["app"], 1)
	vpc := deps["app"]["vpc"]
	require.Equal(t, Succeeded, vpc.Status)
	require.Equal(t, want, vpc.Data, "app's Handle must carry vpc's recorded data")
}

// TestStepWithStateLockWaits: a step's locking command meets a state lock
// held by another run; WithStateLock waits it out with the runner's
// patience, says who holds it, and records the wait in the Result.
func TestStepWithStateLockWaits(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "lockable", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "held.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "stepper", src, files(t, map[string]any{}, state))}
	_, err := w.runner(t).Run(testCtx(t), Apply, u)
	require.NoError(t, err)

	// The holder: a unit of another runner on the same state, parked in
	// its apply.
	ctx, cancel := context.WithCancel(testCtx(t))
	started := g.started(t)
	var holderErr error
	holderExited := make(chan struct{})
	go func() {
		defer close(holderExited)
		_, holderErr = w.runner(t).Run(ctx, Apply, Unit{Workdir: workdirSpec("plat-ue2-dev", "holder", src, files(t, map[string]any{"gate": g.dir}, state))})
	}()
	t.Cleanup(func() { cancel(); <-holderExited })
	select {
	case <-started:
	case <-holderExited:
		t.Fatalf("holder ended early: %v", holderErr)
	}
	info, err := os.ReadFile(filepath.Join(filepath.Dir(state), ".held.tfstate.lock.info"))
	require.NoError(t, err, "the holder should hold the state lock")
	var lock struct{ ID string }
	require.NoError(t, json.Unmarshal(info, &lock))

	var attempts []string // lock timeouts given to each attempt; only the step's goroutine writes
	step := Step("refresh", func(ctx context.Context, h *Handle) error {
		return h.WithStateLock(ctx, "refresh", func(lt string) error {
			attempts = append(attempts, lt)
			return h.Terraform.Refresh(ctx, tfexec.LockTimeout(lt))
		})
	})
	notify := &notifyWriter{want: "state locked by", seen: make(chan struct{})}
	r := w.runner(t, WithLockTimeout(2*time.Minute), WithOutput(notify))
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := r.Run(ctx, step, u)
		done <- result{rep, err}
	}()
	select {
	case <-notify.seen:
	case res := <-done:
		t.Fatalf("the step ended without meeting the lock: %v", res.err)
	}
	g.release(t)
	<-holderExited
	require.NoError(t, holderErr)

	res := <-done
	require.NoError(t, res.err)
	got := res.rep.Results[0]
	require.Equal(t, Succeeded, got.Status)
	require.Positive(t, got.LockWait)
	require.NotNil(t, got.StateLock)
	require.Equal(t, lock.ID, got.StateLock.ID)
	require.GreaterOrEqual(t, len(attempts), 2)
	require.Equal(t, "0ms", attempts[0], "the first attempt shows the holder at once")
	log := readFile(t, got.Log)
	require.Contains(t, log, "refresh: state locked by ID "+lock.ID)
	require.Contains(t, log, "refresh: state lock acquired after waiting")
}

// TestStepExecInterruptedWhenStepReturns: a step that leaves an Exec
// running in a goroutine of its own (an apply parked in a provisioner)
// and returns does not leave terraform behind: the Exec is interrupted
// (terraform gets SIGINT, releases the state lock), the Run returns only
// once it has ended, and the Exec says why it ended (ErrHandleDone).
func TestStepExecInterruptedWhenStepReturns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "leak.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "leak", src, files(t, map[string]any{"gate": g.dir}, state))}

	started := g.started(t)
	execErr := make(chan error, 1)
	step := Step("leak", func(ctx context.Context, h *Handle) error {
		go func() {
			_, err := h.Exec(ctx, "apply", "-auto-approve", "-input=false", "-no-color")
			execErr <- err
		}()
		select {
		case <-started:
			return nil
		case err := <-execErr:
			return fmt.Errorf("the apply ended before its provisioner started: %w", err)
		}
	})
	rep, err := w.runner(t, WithInterruptGrace(20*time.Second)).Run(testCtx(t), step, u)
	require.NoError(t, err)
	res := rep.Results[0]
	require.Equal(t, Succeeded, res.Status, "%v", res.Err)
	select {
	case err := <-execErr:
		require.ErrorIs(t, err, ErrHandleDone)
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
	default:
		t.Fatal("the Run returned while the step's Exec still ran")
	}
	// stdout ("Interrupt received") is the step's; stderr is logged.
	require.Contains(t, readFile(t, res.Log), "Error: execution halted", "terraform got SIGINT")
	require.False(t, g.hasReader(), "the provisioner is still waiting")
	require.Empty(t, processesMentioning(t, w.dir), "processes left behind")
	_, err = os.Stat(filepath.Join(filepath.Dir(state), ".leak.tfstate.lock.info"))
	require.ErrorIs(t, err, os.ErrNotExist, "state lock info left behind")
}

// TestStepExecCanceled: cancelling the Run's context while a step's Exec
// runs (an apply parked in a provisioner) interrupts that terraform like
// the runner's own: SIGINT, the state lock released, nothing left
// running, and the Exec's error says it was canceled.
func TestStepExecCanceled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "cancel.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "cancel", src, files(t, map[string]any{"gate": g.dir}, state))}

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	started := g.started(t)
	var execErr error // written by the step before it returns, read after Run
	step := Step("parked", func(ctx context.Context, h *Handle) error {
		_, execErr = h.Exec(ctx, "apply", "-auto-approve", "-input=false", "-no-color")
		return execErr
	})
	type out struct {
		rep *Report
		err error
	}
	done := make(chan out, 1)
	go func() {
		rep, err := w.runner(t, WithInterruptGrace(20*time.Second)).Run(ctx, step, u)
		done <- out{rep, err}
	}()
	select {
	case <-started:
	case o := <-done:
		t.Fatalf("the run ended before the provisioner started: %v", o.err)
	}
	cancel()
	o := <-done
	require.ErrorIs(t, o.err, context.Canceled)
	require.ErrorIs(t, execErr, context.Canceled)
	var ee *ExecError
	require.ErrorAs(t, execErr, &ee)
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.Contains(t, readFile(t, res.Log), "Error: execution halted", "terraform got SIGINT")
	require.False(t, g.hasReader(), "the provisioner is still waiting")
	require.Empty(t, processesMentioning(t, w.dir), "processes left behind")
	_, err := os.Stat(filepath.Join(filepath.Dir(state), ".cancel.tfstate.lock.info"))
	require.ErrorIs(t, err, os.ErrNotExist, "state lock info left behind")
}
