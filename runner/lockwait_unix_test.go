//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// notifyWriter closes seen the first time a write contains want.
type notifyWriter struct {
	want string
	once sync.Once
	seen chan struct{}
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), n.want) {
		n.once.Do(func() { close(n.seen) })
	}
	return len(p), nil
}

// TestStateLockWait holds a unit's state lock with another OS process (a
// plain terraform apply parked in a provisioner), runs the unit, and only
// releases the holder once the unit has sent an event saying it waits for
// the lock and who holds it: the unit must wait, name the holder, send a
// last wait event with the time waited, and then succeed (issue 17 item
// 13).
func TestStateLockWait(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "lockable", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "shared.tfstate")
	require.NoError(t, os.MkdirAll(filepath.Dir(state), 0o755))

	// The holder: the same configuration in its own directory, on the same state.
	holderDir := filepath.Join(w.dir, "holder")
	require.NoError(t, os.MkdirAll(holderDir, 0o755))
	for name, b := range files(t, map[string]any{}, state) {
		require.NoError(t, os.WriteFile(filepath.Join(holderDir, name), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(holderDir, "main.tf"), []byte(gatedComponent), 0o644))
	cliConfig := filepath.Join(w.dir, "holder.tfrc")
	require.NoError(t, os.WriteFile(cliConfig, nil, 0o644))
	env := testenv.TerraformEnv(cliConfig)
	initCmd := exec.Command(w.tf, "init", "-input=false", "-no-color")
	initCmd.Dir, initCmd.Env = holderDir, env
	out, err := initCmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	holder := startLockHolder(t, w.tf, holderDir, env, g)
	info, err := os.ReadFile(filepath.Join(filepath.Dir(state), ".shared.tfstate.lock.info"))
	require.NoError(t, err, "the holder should hold the state lock")
	var lock struct{ ID string }
	require.NoError(t, json.Unmarshal(info, &lock))
	require.NotEmpty(t, lock.ID)

	rec := &recorder{}
	waiting := make(chan struct{})
	var once sync.Once
	r := w.runner(t, WithLockTimeout(2*time.Minute), WithEvents(func(e Event) {
		rec.add(e)
		if e.Wait != nil && !e.Wait.Done {
			once.Do(func() { close(waiting) })
		}
	}))
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "lockable", src, files(t, map[string]any{}, state))}
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(testCtx(t))
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		rep, err := r.Run(ctx, Apply, u)
		done <- result{rep, err}
	}()
	t.Cleanup(func() { cancel(); <-exited })
	select {
	case <-waiting:
	case res := <-done:
		t.Fatalf("the unit ended without meeting the lock: %v", res.err)
	}
	holder.finish(t)

	res := <-done
	require.NoError(t, res.err)
	got := res.rep.Results[0]
	require.Equal(t, Succeeded, got.Status)
	require.Positive(t, got.LockWait)
	require.NotNil(t, got.StateLock)
	require.Equal(t, lock.ID, got.StateLock.ID)
	require.Equal(t, "OperationTypeApply", got.StateLock.Operation)
	require.False(t, got.StateLock.Created.IsZero())
	log, err := os.ReadFile(got.Log)
	require.NoError(t, err)
	// One line per wait, never terraform's whole lock error.
	require.NotContains(t, string(log), "Error acquiring the state lock")
	require.Contains(t, string(log), "state locked by ID "+lock.ID)
	require.Contains(t, string(log), "state lock acquired after waiting")
	require.Contains(t, string(log), "Apply complete!")

	// The wait as events: while waiting, the holder and the next
	// attempt's patience; at the end, the time waited.
	var waits []Wait
	for _, e := range rec.all() {
		if e.Wait != nil {
			require.Equal(t, PhaseWait, e.Phase)
			require.Equal(t, Running, e.Status)
			waits = append(waits, *e.Wait)
		}
	}
	require.GreaterOrEqual(t, len(waits), 2)
	first, last := waits[0], waits[len(waits)-1]
	require.Equal(t, WaitStateLock, first.Lock)
	require.False(t, first.Done)
	require.NotNil(t, first.State)
	require.Equal(t, lock.ID, first.State.ID)
	require.Positive(t, first.Next)
	require.True(t, last.Done)
	require.Positive(t, last.Waited)
	require.LessOrEqual(t, last.Waited, got.LockWait)
	for _, w := range waits[:len(waits)-1] {
		require.False(t, w.Done, "one Done, at the end")
	}
}

// TestStateLockTimeoutZero: with no patience, a held state lock fails the
// unit with ErrStateLocked and names the holder.
func TestStateLockTimeoutZero(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "lockable", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "held.tfstate")
	// The holder is a unit of another runner, parked in its provisioner.
	holderRunner := w.runner(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	started := g.started(t)
	var holderErr error
	holderExited := make(chan struct{})
	go func() {
		_, holderErr = holderRunner.Run(ctx, Apply, Unit{Workdir: workdirSpec("plat-ue2-dev", "holder", src, files(t, map[string]any{"gate": g.dir}, state))})
		close(holderExited)
	}()
	t.Cleanup(func() { cancel(); <-holderExited })
	select {
	case <-started:
	case <-holderExited:
		t.Fatalf("holder ended early: %v", holderErr)
	}
	r := w.runner(t, WithLockTimeout(0))
	rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: workdirSpec("plat-ue2-dev", "waiter", src, files(t, map[string]any{}, state))})
	require.ErrorIs(t, err, ErrStateLocked)
	require.Equal(t, Failed, rep.Results[0].Status)
	require.NotNil(t, rep.Results[0].StateLock)
	require.NotEmpty(t, rep.Results[0].StateLock.ID)
	// The error says who, since when, and how to release a stale lock.
	require.ErrorContains(t, err, "force-unlock -force -no-color -- "+rep.Results[0].StateLock.ID)
	require.ErrorContains(t, err, "ago)")
	g.release(t)
	<-holderExited
	require.NoError(t, holderErr)
}

// TestInstanceLockWaitEvents: another OS process (a child host applying
// the same instance, parked in a provisioner) holds the instance lock;
// the unit sends a wait event naming that process as soon as it starts
// waiting (the holder is released only then), and a last one with the
// time waited once it has the lock (issue 17 item 13).
func TestInstanceLockWaitEvents(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "inst.tfstate")
	started := g.started(t)
	c := startChild(t, childConfig{TF: w.tf, Root: w.wd.Root(), Cache: w.cache.Dir(),
		Spec: workdirSpec("s", "inst", src, files(t, map[string]any{"gate": g.dir}, state))}, nil)
	select {
	case <-started: // the child holds the instance lock until released
	case <-c.Done():
		t.Fatalf("the child ended before its apply started: %v\n%s", c.Wait(), c.Output())
	}

	rec := &recorder{}
	waiting := make(chan struct{})
	var once sync.Once
	r := w.runner(t, WithEvents(func(e Event) {
		rec.add(e)
		if e.Wait != nil && !e.Wait.Done {
			once.Do(func() { close(waiting) })
		}
	}))
	u := Unit{ID: "s/inst", Workdir: workdirSpec("s", "inst", src, files(t, map[string]any{}, state))}
	done := runAsync(t, r, Apply, u)
	waitFor(t, done, waiting)
	g.release(t)
	require.Equal(t, "succeeded", resultOf(t, c).Status)
	o := waitDone(t, done, "the child's release")
	require.NoError(t, o.err)
	got := o.rep.Results[0]

	var waits []Wait
	for _, e := range rec.all() {
		if e.Wait != nil {
			require.Equal(t, PhaseWait, e.Phase)
			require.Equal(t, WaitInstanceLock, e.Wait.Lock)
			waits = append(waits, *e.Wait)
		}
	}
	require.GreaterOrEqual(t, len(waits), 2)
	named := false
	for _, w := range waits[:len(waits)-1] {
		require.False(t, w.Done)
		if w.Instance != nil {
			require.Equal(t, c.PID(), w.Instance.PID, "the holder is the child")
			named = true
		}
	}
	require.True(t, named, "a wait event names the holder")
	last := waits[len(waits)-1]
	require.True(t, last.Done)
	require.Positive(t, last.Waited)
	require.LessOrEqual(t, last.Waited, got.LockWait)
	require.Equal(t, c.PID(), got.InstanceLock.PID)
}
