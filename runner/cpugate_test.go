package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/queue"
)

// TestCoreGateFreedCoreGoesToTheEarliestUnit: with one core, the units
// waiting for it get it in the order they first asked for a core, so a
// unit between its init and its apply goes before a unit that has not
// started yet.
func TestCoreGateFreedCoreGoesToTheEarliestUnit(t *testing.T) {
	g, err := queue.New([]string{"a", "c", "d"}, make([][]string, 3))
	require.NoError(t, err)
	gate, waits := newOneCoreGate(g)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[int]chan error{}
	ask := func(i int) {
		got[i] = make(chan error, 1)
		go func() { got[i] <- gate.acquire(ctx, i) }()
		require.Equal(t, g.ID(i), <-waits)
	}
	goes := func(i int) {
		select {
		case err := <-got[i]:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatalf("unit %s never got the core", g.ID(i))
		}
	}
	waiting := func(i int) {
		select {
		case <-got[i]:
			t.Fatalf("unit %s got a core that was not free for it", g.ID(i))
		default:
		}
	}

	require.NoError(t, gate.acquire(ctx, 0)) // a: its init, on the free core
	ask(1)                                   // c asks
	gate.release(0)                          // a's init ended
	goes(1)                                  // c runs
	ask(2)                                   // d asks, later than a and c
	ask(0)                                   // a asks again: its apply
	gate.measured(1, 0, true, false)         // c waits on its cloud: its core is free
	goes(0)                                  // to a, which first asked before d
	waiting(2)
	gate.release(0)
	goes(2)
	require.Positive(t, gate.waitedFor(0))
}

// TestCoreGateCountsARunnableUnitBusy: with one core, a sample that
// measures the unit on it at no CPU while a process of it is runnable
// (a spinning provisioner that a loaded machine starved for the span)
// keeps the unit's core, and makes a unit measured idle before count
// again; a sample that finds nothing runnable frees the core.
func TestCoreGateCountsARunnableUnitBusy(t *testing.T) {
	g, err := queue.New([]string{"a", "b"}, make([][]string, 2))
	require.NoError(t, err)
	gate, waits := newOneCoreGate(g)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	busy := func(i int) bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return gate.busy[i]
	}

	require.NoError(t, gate.acquire(ctx, 0))
	gate.measured(0, 0, true, false) // a waits: its core is free
	require.False(t, busy(0))
	gate.measured(0, 0, true, true) // a's spinner, starved for the span
	require.True(t, busy(0), "a runnable unit measured at no CPU was not counted busy again")
	b := make(chan error, 1)
	go func() { b <- gate.acquire(ctx, 1) }()
	require.Equal(t, "b", <-waits)
	gate.measured(0, 0, true, true)
	require.True(t, busy(0), "a runnable unit measured at no CPU lost its core")
	gate.measured(0, 0, true, false) // nothing of a runnable: a waits
	select {
	case err := <-b:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("b never got the core a left")
	}
}

// newOneCoreGate is a core gate of one core over g's units, and the
// channel that gets a unit's ID each time it begins to wait for a core.
func newOneCoreGate(g *queue.Graph) (*cpuGate, chan string) {
	waits := make(chan string, 10)
	rs := &runState{g: g, cfg: &config{coreGate: 1, coreGateSet: true}, em: &emitter{fn: func(ev Event) {
		if ev.Phase == PhaseCPUWait && ev.CPUWait == 0 {
			waits <- ev.Unit
		}
	}}}
	return rs.newCPUGate(), waits
}
