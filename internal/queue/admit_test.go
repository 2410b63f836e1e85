package queue

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Admission by weight, as the runner's memory budget does it: a unit
// starts only when the running units' weights plus its own fit; one
// heavier than the whole budget runs alone; no unit overtakes another;
// every unit ends.
func TestRunAdmitHoldsTheNextUnitWhileOthersRun(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e", "f"}
	weight := map[string]int{"a": 2, "b": 2, "c": 1, "d": 5, "e": 1, "f": 1}
	const budget = 3
	g, err := New(ids, make([][]string, len(ids)))
	require.NoError(t, err)

	var mu sync.Mutex
	inUse, maxInUse, alone := 0, 0, false
	var started []string
	admit := func(i, running int) bool {
		mu.Lock()
		defer mu.Unlock()
		w := weight[g.ID(i)]
		if inUse+w > budget && running > 0 {
			return false
		}
		inUse += w
		started = append(started, g.ID(i))
		return true
	}
	run := func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		w := weight[g.ID(i)]
		if w > budget {
			alone = inUse == w
		} else {
			maxInUse = max(maxInUse, inUse)
		}
		inUse -= w
		return nil
	}
	out := g.Run(testCtx(t), nil, Policy{Parallelism: 10, Admit: admit}, nil, run, nil)
	for i, o := range out {
		require.Equal(t, Succeeded, o.Status, ids[i])
	}
	require.Equal(t, ids, started, "units start in ID order, none overtaking a held one")
	require.LessOrEqual(t, maxInUse, budget)
	require.True(t, alone, "a unit heavier than the budget runs alone")
}

// With nothing running, the next unit starts even when Admit says no:
// nothing could ever free what it waits for.
func TestRunAdmitNeverWaitsOnNothing(t *testing.T) {
	g, err := New([]string{"x", "y"}, [][]string{nil, nil})
	require.NoError(t, err)
	var asked []int
	out := g.Run(testCtx(t), nil, Policy{Parallelism: 2, Admit: func(i, running int) bool {
		asked = append(asked, running)
		return false
	}}, nil, func(context.Context, int) error { return nil }, nil)
	require.Equal(t, Succeeded, out[0].Status)
	require.Equal(t, Succeeded, out[1].Status)
	require.Equal(t, 0, asked[0])
}

// A unit held back for admission is canceled, not left waiting, when the
// context ends while the unit that holds the budget runs.
func TestRunAdmitWaitEndsWithTheContext(t *testing.T) {
	g, err := New([]string{"big", "next"}, [][]string{nil, nil})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	out := g.Run(ctx, nil, Policy{Parallelism: 2, Admit: func(i, running int) bool { return running == 0 }}, nil,
		func(ctx context.Context, i int) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}, nil)
	require.Equal(t, Canceled, out[0].Status)
	require.Equal(t, Canceled, out[1].Status)
	require.False(t, out[1].Started)
}
