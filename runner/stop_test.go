//go:build unix

package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runAsync starts r.Run in a goroutine; the cleanup cancels and joins it.
func runAsync(t *testing.T, r *Runner, cmd Command, units ...Unit) <-chan runOutcome {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan runOutcome, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		rep, err := r.Run(ctx, cmd, units...)
		done <- runOutcome{rep, err}
	}()
	t.Cleanup(func() { cancel(); <-exited })
	return done
}

type runOutcome struct {
	rep *Report
	err error
}

// waitFor waits until every channel is closed, failing if the run ends
// first.
func waitFor(t *testing.T, done <-chan runOutcome, chans ...<-chan struct{}) {
	t.Helper()
	for _, ch := range chans {
		select {
		case <-ch:
		case o := <-done:
			t.Fatalf("the run ended early: %v", o.err)
		}
	}
}

// hangGuard bounds a wait that must end; it is no speed assertion, only
// a failure instead of a hang.
const hangGuard = 2 * time.Minute

func waitDone(t *testing.T, done <-chan runOutcome, what string) runOutcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(hangGuard):
		t.Fatalf("the run did not return after %s", what)
		return runOutcome{}
	}
}

// killOnCleanup takes s to Kill when the test ends, before the run is
// joined: a test that fails early must not wait out an hour of interrupt
// grace. Register it after runAsync (cleanups run last-in first-out).
func killOnCleanup(t *testing.T, s *Stop) {
	t.Cleanup(func() {
		for s.Level() < Kill {
			s.Request()
		}
	})
}

// TestStopDrain: with one unit at a time, the first request lets the
// running unit finish and starts no other.
func TestStopDrain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	var units []Unit
	for _, inst := range []string{"stop-a", "stop-b", "stop-c"} {
		units = append(units, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src,
			files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "states", inst+".tfstate")))})
	}
	s := NewStop()
	rec := &recorder{}
	r := w.runner(t, WithParallelism(1), WithStop(s), WithEvents(rec.add))
	started := g.started(t)
	done := runAsync(t, r, Apply, units...)
	waitFor(t, done, started)

	require.Equal(t, Drain, s.Request())
	require.Equal(t, Drain, s.Level())
	g.release(t)
	o := waitDone(t, done, "a drain")
	// Nothing failed or was canceled, but the Run did not do everything:
	// its error says which units never started.
	require.ErrorIs(t, o.err, ErrStopped)
	require.ErrorContains(t, o.err, "2 unit(s) never started")

	var first string
	var rest []string
	for _, res := range o.rep.Results {
		if rec.index(res.Unit, PhasePrepare) >= 0 {
			require.Empty(t, first, "two units started under parallelism 1 and a drain")
			first = res.Unit
			require.Equal(t, Succeeded, res.Status, "%v", res.Err)
			require.True(t, res.Started)
			continue
		}
		rest = append(rest, res.Unit)
		require.False(t, res.Started, res.Unit)
		require.Equal(t, Skipped, res.Status, res.Unit)
		require.ErrorIs(t, res.Err, ErrStopped, res.Unit)
		require.ErrorIs(t, res.Err, ErrSkipped, res.Unit)
		require.Equal(t, Skipped, rec.event(res.Unit, PhaseDone).Status)
	}
	require.NotEmpty(t, first)
	require.Len(t, rest, 2)
	require.Equal(t, rest, o.rep.NotStarted())
	require.Equal(t, 2, o.rep.Count(Skipped))
	for _, id := range rest {
		_, err := os.Stat(filepath.Join(w.dir, "states", filepath.Base(id)+".tfstate"))
		require.ErrorIs(t, err, os.ErrNotExist, "%s applied after a drain", id)
	}
}

// TestStopInterrupt: the second request interrupts terraform inside its
// apply; it stops gracefully, the unit is Canceled, and the state lock is
// released.
func TestStopInterrupt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "interrupt.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "interrupt", src, files(t, map[string]any{"gate": g.dir}, state))}
	s := NewStop()
	applying := make(chan struct{})
	r := w.runner(t, WithStop(s), WithInterruptGrace(time.Minute), WithEvents(func(e Event) {
		if e.Phase == PhaseApply {
			close(applying)
		}
	}))
	started := g.started(t)
	done := runAsync(t, r, Apply, u)
	waitFor(t, done, applying, started)

	require.Equal(t, Drain, s.Request())
	require.Equal(t, Interrupt, s.Request())
	o := waitDone(t, done, "an interrupt")
	require.ErrorIs(t, o.err, ErrInterrupted)
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.True(t, res.Started)
	require.ErrorIs(t, res.Err, ErrInterrupted)
	require.Contains(t, readFile(t, res.Log), "Interrupt received", "terraform got SIGINT")
	require.False(t, g.hasReader(), "the provisioner is still waiting")
	home, err := w.wd.Home("plat-ue2-dev", "interrupt")
	require.NoError(t, err)
	require.Empty(t, processesMentioning(t, home), "processes left behind")
	_, err = os.Stat(filepath.Join(filepath.Dir(state), ".interrupt.tfstate.lock.info"))
	require.ErrorIs(t, err, os.ErrNotExist, "state lock info left behind")

	// The state lock is free: an apply that may not wait for it goes
	// through (a runner without the Stop, which stays at Interrupt).
	u.Workdir.Files = files(t, map[string]any{}, state)
	rep, err := w.runner(t, WithLockTimeout(0)).Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status)
	require.Contains(t, stateResources(t, state), "terraform_data.slow")
}

// TestStopKill: three requests in a row with a long interrupt grace: the
// Run returns without waiting out the grace, the unit is Canceled and no
// process of it is left.
func TestStopKill(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "kill", src, files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "states", "kill.tfstate")))}
	s := NewStop()
	applying := make(chan struct{})
	r := w.runner(t, WithStop(s), WithInterruptGrace(time.Hour), WithEvents(func(e Event) {
		if e.Phase == PhaseApply {
			close(applying)
		}
	}))
	started := g.started(t)
	done := runAsync(t, r, Apply, u)
	killOnCleanup(t, s)
	waitFor(t, done, applying, started)

	for _, want := range []StopLevel{Drain, Interrupt, Kill, Kill} {
		require.Equal(t, want, s.Request())
	}
	o := waitDone(t, done, "a kill")
	require.Error(t, o.err)
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.False(t, g.hasReader(), "the provisioner is still waiting")
	home, err := w.wd.Home("plat-ue2-dev", "kill")
	require.NoError(t, err)
	require.Empty(t, processesMentioning(t, home), "processes left behind")
}

// TestStopKillsTerraformThatIgnoresInterrupt proves the third rung on its
// own: "terraform" here is real terraform for everything but apply, where
// a process that ignores SIGINT stands in for a terraform stuck in a
// provider call. With an hour of interrupt grace, only the kill can end
// the Run.
func TestStopKillsTerraformThatIgnoresInterrupt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	wrapper := stuckTerraform(t, w, g)
	src := w.component(t, "plain", pairComponent)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "stuck", src, nil)}
	s := NewStop()
	r, err := New(WithWorkdirs(w.wd), WithPluginCache(w.cache), WithTerraform(wrapper), WithStop(s), WithInterruptGrace(time.Hour))
	require.NoError(t, err)
	started := g.started(t)
	done := runAsync(t, r, Apply, u)
	killOnCleanup(t, s)
	waitFor(t, done, started)

	require.Equal(t, Drain, s.Request())
	require.Equal(t, Interrupt, s.Request())
	require.Equal(t, Kill, s.Request())
	o := waitDone(t, done, "a kill")
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.False(t, g.hasReader(), "the killed process is still waiting")
	home, err := w.wd.Home("plat-ue2-dev", "stuck")
	require.NoError(t, err)
	require.Empty(t, processesMentioning(t, home), "processes left behind")
	require.Equal(t, Kill, s.Level())
}

// TestZeroValues: the zero Stop works like NewStop's (its ladder fires
// through WithStop), and a zero or nil Runner refuses every call with
// ErrBadOption instead of panicking.
func TestZeroValues(t *testing.T) {
	var s Stop
	require.Equal(t, NotStopped, s.Level())
	drain := s.Draining()
	require.Equal(t, Drain, s.Request())
	<-drain // closed, so this returns
	require.Equal(t, Interrupt, s.Request())
	<-s.Interrupting()
	require.Equal(t, Kill, s.Request())
	<-s.Killing()
	require.Equal(t, Kill, s.Request())

	var zero Runner
	var nilRunner *Runner
	for _, r := range []*Runner{&zero, nilRunner} {
		_, err := r.Run(testCtx(t), Apply, Unit{Workdir: workdirSpec("s", "i", t.TempDir(), nil)})
		require.ErrorIs(t, err, ErrBadOption)
		_, err = r.Order(Apply)
		require.ErrorIs(t, err, ErrBadOption)
		_, err = r.Binary(testCtx(t))
		require.ErrorIs(t, err, ErrBadOption)
		require.ErrorIs(t, r.ForceUnlock(testCtx(t), Unit{}, "id"), ErrBadOption)
	}
}

// TestZeroStopDrains: a zero Stop given to WithStop drains a Run.
func TestZeroStopDrains(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, _ := fakeTerraform(t, fakeTerraformBody)
	var s Stop
	s.Request()
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithStop(&s))
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: workdirSpec("plat-ue2-dev", "zero-stop", src, nil)})
	require.ErrorIs(t, err, ErrStopped)
	require.False(t, rep.Results[0].Started)
}

// TestStopKillReachesStep: a Stop's kill ends a custom step's
// terraform-exec process too (here a terraform that ignores SIGINT while
// it applies), with an hour of interrupt grace: Step promises every
// guarantee Run gives, the stop ladder included.
func TestStopKillReachesStep(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	wrapper := stuckTerraform(t, w, g)
	src := w.component(t, "plain", pairComponent)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "stuck-step", src, nil)}
	s := NewStop()
	r, err := New(WithWorkdirs(w.wd), WithPluginCache(w.cache), WithTerraform(wrapper), WithStop(s), WithInterruptGrace(time.Hour))
	require.NoError(t, err)
	apply := Step("apply-by-hand", func(ctx context.Context, h *Handle) error { return h.Terraform.Apply(ctx) })
	started := g.started(t)
	done := runAsync(t, r, apply, u)
	killOnCleanup(t, s)
	waitFor(t, done, started)

	require.Equal(t, Drain, s.Request())
	require.Equal(t, Interrupt, s.Request())
	require.Equal(t, Kill, s.Request())
	o := waitDone(t, done, "a kill")
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.False(t, g.hasReader(), "the killed process is still waiting")
	home, err := w.wd.Home("plat-ue2-dev", "stuck-step")
	require.NoError(t, err)
	require.Empty(t, processesMentioning(t, home), "processes left behind")
}

// stuckTerraform writes a "terraform" that is real terraform for every
// command but apply, where it announces itself on g and then waits on it
// ignoring SIGINT: a terraform stuck in a provider call, which only a
// kill ends.
func stuckTerraform(t *testing.T, w *world, g gate) string {
	t.Helper()
	wrapper := filepath.Join(w.dir, "bin", "terraform")
	require.NoError(t, os.MkdirAll(filepath.Dir(wrapper), 0o755))
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = apply ]; then\n" +
		"  trap '' INT\n" +
		"  echo started > \"" + g.dir + "/started\"\n" +
		"  exec cat \"" + g.dir + "/release\"\n" +
		"fi\n" +
		"exec '" + w.tf + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	return wrapper
}
