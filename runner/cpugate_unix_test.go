//go:build linux

package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/workdir"
)

// spinComponent's provisioner announces itself on a fifo of its own and
// then keeps a core busy until the release file exists: a unit in a
// CPU-bound phase for as long as the test wants.
const spinComponent = `
variable "dir" { type = string }
resource "terraform_data" "spin" {
  provisioner "local-exec" {
    command = "echo started > ${var.dir}/started; while [ ! -e ${var.dir}/../release ]; do :; done"
  }
}
`

// announcer returns a channel that gets one value once a provisioner
// wrote to dir/started (a fifo). The reading goroutine is joined when
// the test ends.
func announcer(t *testing.T, dir string) <-chan struct{} {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, "started")
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	g := gate{dir: dir}
	return g.started(t)
}

// TestCoreGateHoldsBackWhileBusy: with one core, three units whose
// apply keeps a core busy in its provisioner. While one spins, the
// others' terraform processes wait for the core (PhaseCPUWait events),
// and only once the spinners are released do they go on: all three
// succeed, the waits are in their Results and events. Without the gate
// all three would spin at once.
func TestCoreGateHoldsBackWhileBusy(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "spin", spinComponent)
	base := filepath.Join(w.dir, "spin")
	var units []Unit
	started := map[string]<-chan struct{}{}
	for i := range 3 {
		dir := filepath.Join(base, fmt.Sprint(i))
		u := Unit{ID: fmt.Sprintf("plat/spin-%d", i), Workdir: workdirSpec("plat", fmt.Sprintf("spin-%d", i), src,
			files(t, map[string]any{"dir": dir}, filepath.Join(w.dir, "states", fmt.Sprintf("spin-%d.tfstate", i))))}
		started[u.ID] = announcer(t, dir)
		units = append(units, u)
	}
	waits := make(chan Event, 64)
	rec := &recorder{}
	r := w.runner(t, WithCoreGate(1), WithParallelism(3), WithEvents(func(e Event) {
		rec.add(e)
		if e.Phase == PhaseCPUWait {
			waits <- e
		}
	}))

	ctx := testCtx(t)
	done := runAsync(t, r, Apply, units...)
	release := filepath.Join(base, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) }) // before the Run is cancelled: a failed test's spinners end too

	// Wait for one spinner and, while it spins, another unit waiting for
	// the core (a wait event not yet followed by the unit's admission).
	spinning := ""
	waited, pending := map[string]bool{}, map[string]bool{}
	otherPending := func() bool {
		for id := range pending {
			if id != spinning {
				return true
			}
		}
		return false
	}
	// A second spinner fails the test at once: beside the first, it
	// shows the gate let a unit in while a core was busy, and the wait
	// this loop looks for may then never come.
	spins := func(id string) {
		if spinning != "" {
			t.Fatalf("%s spins beside %s on one core", id, spinning)
		}
		spinning = id
	}
	s0, s1, s2 := started[units[0].ID], started[units[1].ID], started[units[2].ID] // nil once seen
	for spinning == "" || !otherPending() {
		select {
		case e := <-waits:
			waited[e.Unit] = true
			pending[e.Unit] = e.CPUWait == 0
			if !pending[e.Unit] {
				delete(pending, e.Unit)
			}
		case <-s0:
			spins(units[0].ID)
			s0 = nil
		case <-s1:
			spins(units[1].ID)
			s1 = nil
		case <-s2:
			spins(units[2].ID)
			s2 = nil
		case res := <-done:
			t.Fatalf("the Run ended before a spinner and a wait: %v", res.err)
		case <-ctx.Done():
			t.Fatal("no spinner and wait for the core in time")
		}
	}
	// While the spinner keeps its core busy (for as long as it takes it
	// to use 3 samples' worth of CPU: the spinner's own CPU time is the
	// clock), the waiting units stay waiting: none is admitted, none
	// spins.
	spinDir := filepath.Join(base, spinning[len("plat/spin-"):])
	pid := spinnerPID(t, spinDir)
	cpu0 := memory.Tree(pid)[0].CPU
	for {
		p := memory.Tree(pid)
		require.NotEmpty(t, p, "the spinner ended before it was released")
		if p[0].CPU >= cpu0+3*memory.DefaultInterval {
			break
		}
		select {
		case e := <-waits:
			require.False(t, pending[e.Unit] && e.CPUWait > 0, "%s was given the core while %s spun", e.Unit, spinning)
		case <-ctx.Done():
			t.Fatal("the spinner used no CPU")
		case <-time.After(memory.DefaultInterval): // look at the spinner's CPU again
		}
	}
	for id := range pending {
		select {
		case <-started[id]:
			t.Fatalf("%s spins beside %s on one core", id, spinning)
		default:
		}
	}
	require.NoError(t, os.WriteFile(release, nil, 0o644))

	res := <-done
	require.NoError(t, res.err)
	var cpuWait int
	for _, u := range res.rep.Results {
		require.Equal(t, Succeeded, u.Status, "%s: %v", u.Unit, u.Err)
		if u.CPUWait > 0 {
			cpuWait++
		}
	}
	require.GreaterOrEqual(t, cpuWait, 1, "a unit's Result counts its wait for the core")
	for id := range waited {
		admitted := false
		for _, e := range rec.all() {
			if e.Unit == id && e.Phase == PhaseCPUWait && e.CPUWait > 0 {
				admitted = true
			}
		}
		require.True(t, admitted, "%s waited for the core, then an event said how long", id)
	}
}

// TestCoreGateFreesWaitingUnits: with one core, three units whose apply
// waits in a provisioner blocked on a fifo (no CPU, as a unit waiting
// on its cloud). All three must wait at once before any is released:
// a waiting unit holds no core, or the Run could never get there.
func TestCoreGateFreesWaitingUnits(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	var units []Unit
	var gates []gate
	for i := range 3 {
		g := newGate(t, filepath.Join(w.dir, fmt.Sprintf("gate-%d", i)))
		gates = append(gates, g)
		units = append(units, Unit{ID: fmt.Sprintf("plat/gated-%d", i), Workdir: workdirSpec("plat", fmt.Sprintf("gated-%d", i), src,
			files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "states", fmt.Sprintf("gated-%d.tfstate", i))))})
	}
	r := w.runner(t, WithCoreGate(1), WithParallelism(3))
	var startedChs []<-chan struct{}
	for _, g := range gates {
		startedChs = append(startedChs, g.started(t))
	}
	done := runAsync(t, r, Apply, units...)
	waitFor(t, done, startedChs...) // every provisioner waits at once
	for _, g := range gates {
		g.release(t)
	}
	res := <-done
	require.NoError(t, res.err)
	for _, u := range res.rep.Results {
		require.Equal(t, Succeeded, u.Status, "%s: %v", u.Unit, u.Err)
	}
}

func TestWithCoreGateRefusesNegative(t *testing.T) {
	wd, err := workdir.New(t.TempDir())
	require.NoError(t, err)
	_, err = New(WithWorkdirs(wd), WithCoreGate(-1))
	require.ErrorIs(t, err, ErrBadOption)
	require.ErrorContains(t, err, "WithCoreGate(-1)")
}

// spinnerPID finds the spinning shell of the unit whose provisioner
// announces itself in dir: the process whose command line names it.
func spinnerPID(t *testing.T, dir string) int {
	t.Helper()
	want := []byte(filepath.Join(dir, "started"))
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmd, want) {
			return pid
		}
	}
	t.Fatalf("no process names %s", want)
	return 0
}
