package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCoreGateFreedCoreGoesToTheEarliestUnit: with one core, the units
// waiting for it get it in the order they first asked for a core, so a
// unit between its init and its apply goes before a unit that has not
// started yet.
func TestCoreGateFreedCoreGoesToTheEarliestUnit(t *testing.T) {
	gate, waits := newOneCoreGate()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[int]chan error{}
	ask := func(i int) {
		got[i] = make(chan error, 1)
		go func() { got[i] <- gate.Acquire(ctx, i) }()
		require.Equal(t, i, <-waits)
	}
	goes := func(i int) {
		select {
		case err := <-got[i]:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatalf("unit %d never got the core", i)
		}
	}
	waiting := func(i int) {
		select {
		case <-got[i]:
			t.Fatalf("unit %d got a core that was not free for it", i)
		default:
		}
	}

	require.NoError(t, gate.Acquire(ctx, 0)) // 0: its init, on the free core
	ask(1)                                   // 1 asks
	gate.Release(0)                          // 0's init ended
	goes(1)                                  // 1 runs
	ask(2)                                   // 2 asks, later than 0 and 1
	ask(0)                                   // 0 asks again: its apply
	gate.measured(1, 0, true, false)         // 1 waits on its cloud: its core is free
	goes(0)                                  // to 0, which first asked before 2
	waiting(2)
	gate.Release(0)
	goes(2)
	require.Positive(t, gate.Waited(0))
}

// TestCoreGateCountsARunnableUnitBusy: with one core, a sample that
// measures the unit on it at no CPU while a process of it is runnable
// (a spinning provisioner that a loaded machine starved for the span)
// keeps the unit's core, and makes a unit measured idle before count
// again; a sample that finds nothing runnable frees the core.
func TestCoreGateCountsARunnableUnitBusy(t *testing.T) {
	gate, waits := newOneCoreGate()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	busy := func(i int) bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return gate.busy[i]
	}

	require.NoError(t, gate.Acquire(ctx, 0))
	gate.measured(0, 0, true, false) // 0 waits: its core is free
	require.False(t, busy(0))
	gate.measured(0, 0, true, true) // 0's spinner, starved for the span
	require.True(t, busy(0), "a runnable unit measured at no CPU was not counted busy again")
	b := make(chan error, 1)
	go func() { b <- gate.Acquire(ctx, 1) }()
	require.Equal(t, 1, <-waits)
	gate.measured(0, 0, true, true)
	require.True(t, busy(0), "a runnable unit measured at no CPU lost its core")
	gate.measured(0, 0, true, false) // nothing of 0 runnable: it waits
	select {
	case err := <-b:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("1 never got the core 0 left")
	}
}

// A unit waiting for a core stops waiting when its context ends, with
// the context's cause, and the units behind it move up.
func TestCoreGateWaitEndsWithTheContext(t *testing.T) {
	gate, waits := newOneCoreGate()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, gate.Acquire(ctx, 0))
	short, stop := context.WithCancelCause(ctx)
	errc := make(chan error, 1)
	go func() { errc <- gate.Acquire(short, 1) }()
	require.Equal(t, 1, <-waits)
	cause := context.Canceled
	stop(cause)
	err := <-errc
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, "waiting for a core")
	gate.mu.Lock()
	require.Empty(t, gate.waiting, "a unit that gave up waits no more")
	gate.mu.Unlock()
}

// A nil gate is no gate: nothing waits.
func TestCoreGateNilNeverWaits(t *testing.T) {
	var gate *Cores
	require.NoError(t, gate.Acquire(context.Background(), 0))
	gate.Release(0)
	gate.measured(0, 1, true, true)
	require.Zero(t, gate.Waited(0))
}

// newOneCoreGate is a core gate of one core, and the channel that gets
// a unit's index each time it begins to wait for a core.
func newOneCoreGate() (*Cores, chan int) {
	waits := make(chan int, 10)
	return NewCores(1, func(w Wait) {
		if w.Waited == 0 {
			waits <- w.Unit
		}
	}), waits
}
