//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// tfDataDirsUnder lists the processes whose TF_DATA_DIR lies under root:
// every process a unit starts (the engine, its providers, provisioners)
// inherits its data dir.
func tfDataDirsUnder(t *testing.T, root string) []string {
	t.Helper()
	return processesMentioning(t, "TF_DATA_DIR="+root+string(filepath.Separator))
}

// gatedUnit is the instance "gated/NAME" of the gated fixture, parked on
// gate g during its apply when g is set.
func (w *engineWorld) gatedUnit(t *testing.T, name string, g *gate) Unit {
	t.Helper()
	vars := map[string]any{}
	if g != nil {
		vars["gate"] = g.dir
	}
	return w.unit(t, "gated/"+name, fixture(t, "gated"), vars, name)
}

// TestEnginesInterrupt cancels the context of a run whose unit is parked
// inside its apply (a provisioner waiting on a gate), under each engine:
// the unit is Canceled, the engine got an interrupt (its log says so), the
// state lock is released (an apply that will not wait for it succeeds)
// and no process with the unit's data dir is left.
func TestEnginesInterrupt(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		g := newGate(t, filepath.Join(w.dir, "gate"))
		u := w.gatedUnit(t, "one", &g)

		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		rec := &recorder{}
		r := w.runner(t, WithInterruptGrace(time.Minute), WithEvents(rec.add))
		started := g.started(t)
		type out struct {
			rep *Report
			err error
		}
		done := make(chan out, 1)
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			rep, err := r.Run(ctx, Apply, u)
			done <- out{rep, err}
		}()
		t.Cleanup(func() { cancel(); <-exited })
		var o out
		select {
		case <-started:
		case o = <-done:
			t.Fatalf("the run ended before its provisioner started: %v", o.err)
		}
		cancel()
		o = <-done

		require.ErrorIs(t, o.err, context.Canceled)
		res := o.rep.Results[0]
		require.Equal(t, Canceled, res.Status, "%v", res.Err)
		require.Equal(t, Canceled, rec.event(res.Unit, PhaseDone).Status)
		require.Equal(t, string(e.Kind), o.rep.Engine.Kind)
		log := readFile(t, res.Log)
		require.Contains(t, log, "Interrupt received", "%s got SIGINT", e.Kind)
		require.NotContains(t, log, "killed leftover process", "%s stopped by itself within the grace", e.Kind)
		require.False(t, g.hasReader(), "the provisioner is still waiting")
		require.Empty(t, tfDataDirsUnder(t, w.root), "processes left behind")
		require.NoFileExists(t, filepath.Join(w.dir, "states", ".one.tfstate.lock.info"), "state lock info left behind")

		// The state lock is free: an apply that does not wait for it at
		// all goes through, on the same state.
		r = w.runner(t, WithLockTimeout(0))
		rep, err := r.Run(testCtx(t), Apply, w.gatedUnit(t, "one", nil))
		require.NoError(t, err)
		require.Equal(t, Succeeded, rep.Results[0].Status)
		require.Nil(t, rep.Results[0].StateLock, "the apply met a state lock")
		require.Equal(t, "item-gated", outputString(t, rep.Results[0], "id"))
		items := stateResources(t, w.statePath("one"))
		require.Contains(t, items, "terraform_data.slow")
		require.Equal(t, 1, w.reg.TotalDownloads())
	})
}

// startEngineChild starts the test binary as a child runner (see
// applyChild) applying cfg.Spec with the engine cfg.TF. The child's
// environment sends any HTTP(S) request to a dead loopback port, so a
// child that tried to reach a public registry fails instead of going
// out: it must get the provider from the warm cache alone.
func startEngineChild(t *testing.T, cfg childConfig, stderr *notifyWriter) *childproc.Proc {
	t.Helper()
	const dead = "http://127.0.0.1:1"
	return startChild(t, cfg, stderr,
		"HTTPS_PROXY="+dead, "HTTP_PROXY="+dead, "https_proxy="+dead, "http_proxy="+dead, "NO_PROXY=", "no_proxy=")
}

// TestEnginesTwoProcesses runs one instance from two OS processes at
// once, under each engine (the child runner is given the engine's
// binary): the first parks inside its apply, the second waits for the
// instance lock and reaches its own apply only after the first is
// released; both succeed, with the engine's lock file and state. The
// cache was warmed by an in-process apply of the instance, whose lock
// file pins the provider, so the children need no network.
func TestEnginesTwoProcesses(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		version := engineVersion(t, e.Path)
		rep, err := w.runner(t).Run(testCtx(t), Apply, w.gatedUnit(t, "shared", nil))
		require.NoError(t, err)
		require.Equal(t, Succeeded, rep.Results[0].Status)
		lock := w.lockFile(t, "gated/shared")
		w.requireEngineLock(t, lock)

		g := newGate(t, filepath.Join(w.dir, "gate"))
		cfg := childConfig{TF: e.Path, Root: w.root, Cache: w.cacheDir, Spec: w.gatedUnit(t, "shared", &g).Workdir}
		started := g.started(t)
		first := startEngineChild(t, cfg, nil)
		select {
		case <-started:
		case <-first.Done():
			t.Fatalf("the first process ended before its apply: %v\n%s", first.Wait(), first.Output())
		}
		waiting := &notifyWriter{want: "waiting for instance lock", seen: make(chan struct{})}
		second := startEngineChild(t, cfg, waiting)
		select {
		case <-waiting.seen:
		case <-second.Done():
			t.Fatalf("the second process ended while the first held the instance: %v\n%s", second.Wait(), second.Output())
		}
		started = g.started(t)
		g.release(t)
		r1 := resultOf(t, first)
		select {
		case <-started:
		case <-second.Done():
			t.Fatalf("the second process never reached its apply: %v\n%s", second.Wait(), second.Output())
		}
		g.release(t)
		r2 := resultOf(t, second)
		require.Equal(t, "succeeded", r1.Status, r1.Err)
		require.Equal(t, "succeeded", r2.Status, r2.Err)
		require.Zero(t, r1.LockWait, "the first process had the instance to itself")
		require.Positive(t, r2.LockWait, "the second process waited for the instance lock")
		// The waiter's Result names the holder: the first process.
		require.NotNil(t, r2.Holder)
		require.Equal(t, first.PID(), r2.Holder.PID)
		host, _ := os.Hostname()
		require.Equal(t, host, r2.Holder.Host)
		require.Nil(t, r1.Holder, "the first process never waited")

		// The children ran this engine: it wrote the state, and the lock
		// file is still the engine's, unchanged.
		b, err := os.ReadFile(w.statePath("shared"))
		require.NoError(t, err)
		var st struct {
			Version string `json:"terraform_version"`
		}
		require.NoError(t, json.Unmarshal(b, &st))
		require.Equal(t, version, st.Version)
		require.Equal(t, string(lock), string(w.lockFile(t, "gated/shared")))
		require.Equal(t, 1, w.reg.TotalDownloads())
		require.Empty(t, tfDataDirsUnder(t, w.root), "processes left behind")
	})
}
