package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errBoom = errors.New("boom")

func testCtx(t *testing.T) context.Context {
	// A deadline only turns a scheduler bug (a gate that never opens) into
	// a failure instead of a hung test; nothing waits for it to pass.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// reach[a][b]: unit a depends on unit b, directly or transitively,
// computed without the package's own walks.
func reachOf(g *Graph) [][]bool {
	n := g.Len()
	reach := make([][]bool, n)
	for a := range n {
		reach[a] = make([]bool, n)
		stack := g.Deps(a)
		for len(stack) > 0 {
			b := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !reach[a][b] {
				reach[a][b] = true
				stack = append(stack, g.Deps(b)...)
			}
		}
	}
	return reach
}

// harness wraps a Run's callbacks and checks, for every test, what Run
// promises whatever the scenario: done exactly once per selected unit and
// never for others, never two done calls at once, the outcome handed to
// done is the one returned, Started iff run was called, at most
// Parallelism units in run at once, and a unit's run only after done has
// returned for every unit it waits for (transitively, through unselected
// units too).
type harness struct {
	g     *Graph
	sel   []bool
	p     Policy
	reach [][]bool

	inDone  atomic.Int32
	overlap atomic.Bool

	mu           sync.Mutex
	runs         []int
	doneN        []int
	doneReturned []bool
	outs         []Outcome
	cur, peak    int
	early        []string
}

func newHarness(g *Graph, sel []bool, p Policy) *harness {
	n := g.Len()
	if sel == nil {
		sel = make([]bool, n)
		for i := range sel {
			sel[i] = true
		}
	}
	return &harness{g: g, sel: sel, p: p, reach: reachOf(g),
		runs: make([]int, n), doneN: make([]int, n), doneReturned: make([]bool, n), outs: make([]Outcome, n)}
}

// waitsFor reports whether u must wait for w under the harness's policy.
func (h *harness) waitsFor(u, w int) bool {
	switch {
	case h.p.IgnoreOrder || !h.sel[w]:
		return false
	case h.p.Reverse:
		return h.reach[w][u]
	default:
		return h.reach[u][w]
	}
}

func (h *harness) run(fn func(ctx context.Context, i int) error) func(ctx context.Context, i int) error {
	return func(ctx context.Context, i int) error {
		h.mu.Lock()
		h.runs[i]++
		for w := range h.g.Len() {
			if h.waitsFor(i, w) && !h.doneReturned[w] {
				h.early = append(h.early, fmt.Sprintf("%s started before done(%s) returned", h.g.ID(i), h.g.ID(w)))
			}
		}
		h.cur++
		h.peak = max(h.peak, h.cur)
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.cur--
			h.mu.Unlock()
		}()
		return fn(ctx, i)
	}
}

func (h *harness) done(i int, o Outcome) {
	if h.inDone.Add(1) != 1 {
		h.overlap.Store(true)
	}
	defer h.inDone.Add(-1)
	runtime.Gosched() // widen the window in which an overlap would show
	h.mu.Lock()
	defer h.mu.Unlock()
	h.doneN[i]++
	h.outs[i] = o
	h.doneReturned[i] = true
}

func (h *harness) check(t *testing.T, outs []Outcome) {
	t.Helper()
	require.Len(t, outs, h.g.Len())
	require.False(t, h.overlap.Load(), "done calls overlapped")
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Empty(t, h.early)
	require.LessOrEqual(t, h.peak, max(h.p.Parallelism, 1), "more units ran at once than Parallelism")
	for i := range h.g.Len() {
		id := h.g.ID(i)
		if !h.sel[i] {
			require.Zero(t, h.doneN[i], "done called for unselected %s", id)
			require.Zero(t, h.runs[i], "run called for unselected %s", id)
			require.Zero(t, outs[i], "outcome of unselected %s", id)
			continue
		}
		require.Equal(t, 1, h.doneN[i], "done calls for %s", id)
		require.Equal(t, outs[i], h.outs[i], "done and Run disagree on %s", id)
		require.Equal(t, h.runs[i] == 1, outs[i].Started, "Started of %s", id)
		require.LessOrEqual(t, h.runs[i], 1, "run calls for %s", id)
		require.Equal(t, outs[i].Status == Succeeded, outs[i].Err == nil, "%s: %v %v", id, outs[i].Status, outs[i].Err)
	}
}

// runQueue runs g through the harness and returns the outcomes by ID.
func runQueue(t *testing.T, ctx context.Context, g *Graph, sel []bool, p Policy, drain <-chan struct{},
	fn func(ctx context.Context, id string) error) map[string]Outcome {
	t.Helper()
	h := newHarness(g, sel, p)
	outs := g.Run(ctx, sel, p, drain, h.run(func(ctx context.Context, i int) error { return fn(ctx, g.ID(i)) }), h.done)
	h.check(t, outs)
	m := map[string]Outcome{}
	for i, o := range outs {
		if h.sel[i] {
			m[g.ID(i)] = o
		}
	}
	return m
}

func statuses(m map[string]Outcome) map[string]Status {
	s := map[string]Status{}
	for id, o := range m {
		s[id] = o.Status
	}
	return s
}

func succeed(context.Context, string) error { return nil }

// failOn returns a run function failing the given units.
func failOn(ids ...string) func(context.Context, string) error {
	return func(_ context.Context, id string) error {
		for _, f := range ids {
			if f == id {
				return fmt.Errorf("apply %s: %w", id, errBoom)
			}
		}
		return nil
	}
}

// barrier lets units through in groups of n: the n-th arrival opens the
// gate for its group, so it opens only if n units genuinely run at once.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	gates   map[int]chan struct{}
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	group := b.arrived / b.n
	b.arrived++
	if b.gates == nil {
		b.gates = map[int]chan struct{}{}
	}
	g, ok := b.gates[group]
	if !ok {
		g = make(chan struct{})
		b.gates[group] = g
	}
	if b.arrived%b.n == 0 {
		close(g)
	}
	b.mu.Unlock()
	select {
	case <-g:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("barrier group %d never filled: %w", group, ctx.Err())
	}
}

// gates hands out one channel per unit ID, for tests that release units
// one by one.
type gates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (gs *gates) get(id string) chan struct{} {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.m == nil {
		gs.m = map[string]chan struct{}{}
	}
	if gs.m[id] == nil {
		gs.m[id] = make(chan struct{})
	}
	return gs.m[id]
}

func TestRunPeakConcurrencyEqualsParallelism(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var specs []string
			for i := range 3 * n {
				specs = append(specs, fmt.Sprintf("u%02d", i))
			}
			g := mkGraph(t, specs...)
			b := &barrier{n: n}
			h := newHarness(g, nil, Policy{Parallelism: n})
			outs := g.Run(testCtx(t), nil, h.p, nil, h.run(func(ctx context.Context, _ int) error { return b.wait(ctx) }), h.done)
			h.check(t, outs)
			require.Equal(t, n, h.peak, "the barrier only opens with n at once; the harness caps it at n")
			for _, o := range outs {
				require.Equal(t, Succeeded, o.Status, o.Err)
			}
		})
	}
}

func TestRunParallelismBelowOneMeansOne(t *testing.T) {
	g := mkGraph(t, "a", "b", "c", "d")
	for _, par := range []int{0, -3} {
		h := newHarness(g, nil, Policy{Parallelism: par})
		outs := g.Run(testCtx(t), nil, h.p, nil, h.run(func(context.Context, int) error { return nil }), h.done)
		h.check(t, outs) // checks peak <= 1
		require.Equal(t, 1, h.peak)
	}
}

// TestRunOrder holds every unit until the test releases it, in the order
// units start, so several units run at once; the harness checks at each
// start that everything the unit waits for is done.
func TestRunOrder(t *testing.T) {
	specs := []string{"a", "b:a", "c:a", "d:b,c", "e", "f:e,d", "g"}
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			g := mkGraph(t, specs...)
			var gs gates
			started := make(chan string)
			var outs map[string]Outcome
			runDone := make(chan struct{})
			go func() {
				defer close(runDone)
				outs = runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 10, Reverse: reverse}, nil,
					func(ctx context.Context, id string) error {
						select {
						case started <- id:
						case <-ctx.Done():
							return ctx.Err()
						}
						select {
						case <-gs.get(id):
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					})
			}()
			var order []string
			for range specs {
				id := <-started
				order = append(order, id)
				close(gs.get(id))
			}
			<-runDone
			for id, o := range outs {
				require.Equal(t, Succeeded, o.Status, id)
			}
			pos := map[string]int{}
			for k, id := range order {
				pos[id] = k
			}
			for _, dep := range [][2]string{{"b", "a"}, {"c", "a"}, {"d", "b"}, {"d", "c"}, {"f", "e"}, {"f", "d"}} {
				first, then := dep[1], dep[0]
				if reverse {
					first, then = then, first
				}
				require.Less(t, pos[first], pos[then], "%s must start after %s: %v", then, first, order)
			}
		})
	}
}

// TestRunHappensBefore lets done write a plain slice that the dependents'
// run then reads without locks: under -race, a run starting before done
// returned (or without a happens-before edge to it) is reported.
func TestRunHappensBefore(t *testing.T) {
	var specs []string
	var all []string
	for i := range 12 {
		root := fmt.Sprintf("r%02d", i)
		specs = append(specs, root, fmt.Sprintf("m%02d:%s", i, root))
		all = append(all, fmt.Sprintf("m%02d", i))
	}
	specs = append(specs, "top:"+fmt.Sprint(joinIDs(all)))
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			g := mkGraph(t, specs...)
			results := make([]string, g.Len()) // written by done, read by run: no lock on purpose
			waits := make([][]int, g.Len())
			for i := range g.Len() {
				for _, d := range g.Deps(i) {
					if reverse {
						waits[d] = append(waits[d], i)
					} else {
						waits[i] = append(waits[i], d)
					}
				}
			}
			outs := g.Run(testCtx(t), nil, Policy{Parallelism: 4, Reverse: reverse}, nil,
				func(_ context.Context, i int) error {
					for _, w := range waits[i] {
						if results[w] != "out-"+g.ID(w) {
							return fmt.Errorf("%s read %q for %s", g.ID(i), results[w], g.ID(w))
						}
					}
					return nil
				},
				func(i int, o Outcome) {
					if o.Status == Succeeded {
						results[i] = "out-" + g.ID(i)
					}
				})
			for i, o := range outs {
				require.Equal(t, Succeeded, o.Status, "%s: %v", g.ID(i), o.Err)
			}
		})
	}
}

func joinIDs(ids []string) string {
	s := ""
	for k, id := range ids {
		if k > 0 {
			s += ","
		}
		s += id
	}
	return s
}

// TestRunNoWaveBarrier: b depends on a only; slow is unrelated and is
// released only once b has started. With a barrier between waves b would
// wait for slow and the run would never end.
func TestRunNoWaveBarrier(t *testing.T) {
	g := mkGraph(t, "slow", "a", "b:a")
	bStarted := make(chan struct{})
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 3}, nil, func(ctx context.Context, id string) error {
		switch id {
		case "slow":
			select {
			case <-bStarted:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("b never started while slow ran: %w", ctx.Err())
			}
		case "b":
			close(bStarted)
		}
		return nil
	})
	require.Equal(t, map[string]Status{"slow": Succeeded, "a": Succeeded, "b": Succeeded}, statuses(outs))
}

func TestRunFailureSkipsDependentsOnly(t *testing.T) {
	g := mkGraph(t, "a", "b:a", "c", "d:b", "e:c")
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2}, nil, failOn("a"))
	require.Equal(t, map[string]Status{"a": Failed, "b": Skipped, "c": Succeeded, "d": Skipped, "e": Succeeded}, statuses(outs))
	require.ErrorIs(t, outs["a"].Err, errBoom)
	require.True(t, outs["a"].Started)
	for _, id := range []string{"b", "d"} {
		err := outs[id].Err
		require.ErrorIs(t, err, ErrSkipped)
		require.ErrorIs(t, err, ErrDependencyFailed)
		require.EqualError(t, err, "skipped: dependency failed: a did not succeed", "names the failed unit, also for d two levels down")
		require.False(t, outs[id].Started)
	}
}

func TestRunFailureSkipsThroughUnselected(t *testing.T) {
	g := mkGraph(t, "a", "x:a", "y:x", "z")
	sel := []bool{true, false, true, true}
	outs := runQueue(t, testCtx(t), g, sel, Policy{Parallelism: 2}, nil, failOn("a"))
	require.Equal(t, map[string]Status{"a": Failed, "y": Skipped, "z": Succeeded}, statuses(outs))
	require.EqualError(t, outs["y"].Err, "skipped: dependency failed: a did not succeed")
}

// TestRunFailureReverse: destroying app fails, so vpc (which app depends
// on) must not be destroyed; dns is unrelated.
func TestRunFailureReverse(t *testing.T) {
	g := mkGraph(t, "vpc", "db:vpc", "app:db", "dns")
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2, Reverse: true}, nil, failOn("app"))
	require.Equal(t, map[string]Status{"app": Failed, "db": Skipped, "vpc": Skipped, "dns": Succeeded}, statuses(outs))
	require.EqualError(t, outs["vpc"].Err, "skipped: dependency failed: app did not succeed")
}

func TestRunFailFast(t *testing.T) {
	g := mkGraph(t, "a", "b", "c", "d")
	bStarted := make(chan struct{})
	var bCause error
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2, FailFast: true}, nil, func(ctx context.Context, id string) error {
		switch id {
		case "a":
			<-bStarted // b is running when a fails
			return errBoom
		case "b":
			close(bStarted)
			<-ctx.Done() // b only ends by being interrupted
			bCause = context.Cause(ctx)
			return ctx.Err()
		}
		return nil
	})
	require.Equal(t, map[string]Status{"a": Failed, "b": Canceled, "c": Skipped, "d": Skipped}, statuses(outs))
	require.ErrorIs(t, bCause, ErrFailFast)
	require.EqualError(t, bCause, "stopped by fail-fast: a failed")
	require.ErrorIs(t, outs["b"].Err, context.Canceled)
	require.ErrorIs(t, outs["b"].Err, ErrFailFast)
	require.True(t, outs["b"].Started)
	for _, id := range []string{"c", "d"} {
		require.ErrorIs(t, outs[id].Err, ErrSkipped)
		require.ErrorIs(t, outs[id].Err, ErrFailFast)
		require.EqualError(t, outs[id].Err, "skipped: stopped by fail-fast: a failed")
		require.False(t, outs[id].Started)
	}
}

func TestRunFailFastWinsOverIgnoreErrors(t *testing.T) {
	g := mkGraph(t, "a", "b:a", "c")
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 1, FailFast: true, IgnoreErrors: true}, nil, failOn("a"))
	require.Equal(t, map[string]Status{"a": Failed, "b": Skipped, "c": Skipped}, statuses(outs))
	require.ErrorIs(t, outs["b"].Err, ErrFailFast)
}

func TestRunIgnoreErrors(t *testing.T) {
	g := mkGraph(t, "a", "b:a", "c:b")
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2, IgnoreErrors: true}, nil, failOn("a", "b"))
	require.Equal(t, map[string]Status{"a": Failed, "b": Failed, "c": Succeeded}, statuses(outs))
}

// TestRunIgnoreOrder runs a chain with a barrier the size of the chain: it
// only opens if every unit runs at the same time.
func TestRunIgnoreOrder(t *testing.T) {
	g := mkGraph(t, "a", "b:a", "c:b", "d:c")
	b := &barrier{n: 4}
	h := newHarness(g, nil, Policy{Parallelism: 4, IgnoreOrder: true})
	outs := g.Run(testCtx(t), nil, h.p, nil, h.run(func(ctx context.Context, _ int) error { return b.wait(ctx) }), h.done)
	h.check(t, outs)
	require.Equal(t, 4, h.peak)
	for _, o := range outs {
		require.Equal(t, Succeeded, o.Status, o.Err)
	}
}

var errInterrupt = errors.New("interrupted by the user")

func TestRunCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(testCtx(t))
	g := mkGraph(t, "a", "b:a")
	outs := runQueue(t, ctx, g, nil, Policy{Parallelism: 2}, nil, func(ctx context.Context, id string) error {
		cancel(errInterrupt)
		<-ctx.Done()
		return ctx.Err()
	})
	require.Equal(t, map[string]Status{"a": Canceled, "b": Canceled}, statuses(outs))
	require.ErrorIs(t, outs["a"].Err, context.Canceled)
	require.ErrorIs(t, outs["a"].Err, errInterrupt, "wraps the context's cause")
	require.ErrorIs(t, outs["b"].Err, errInterrupt)
	require.EqualError(t, outs["b"].Err, "not started: interrupted by the user")
	require.False(t, outs["b"].Started)
}

func TestRunCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g := mkGraph(t, "a", "b:a", "c")
	outs := runQueue(t, ctx, g, nil, Policy{Parallelism: 2}, nil, func(context.Context, string) error {
		t.Error("nothing may start under a cancelled context")
		return nil
	})
	for id, o := range outs {
		require.Equal(t, Canceled, o.Status, id)
		require.EqualError(t, o.Err, "not started: context canceled")
	}
}

// TestRunDrain: a and b are running when drain closes; they finish
// normally with a live context, and nothing else starts.
func TestRunDrain(t *testing.T) {
	g := mkGraph(t, "a", "b", "c:a", "d")
	drain := make(chan struct{})
	var gs gates
	started := make(chan string, 2)
	var ctxErrs sync.Map
	var outs map[string]Outcome
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		outs = runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2}, drain, func(ctx context.Context, id string) error {
			started <- id
			select {
			case <-gs.get(id):
			case <-ctx.Done():
			}
			ctxErrs.Store(id, ctx.Err())
			return ctx.Err()
		})
	}()
	first := []string{<-started, <-started}
	require.ElementsMatch(t, []string{"a", "b"}, first, "ID order, two at once")
	close(drain)
	close(gs.get("a"))
	close(gs.get("b"))
	<-runDone
	require.Equal(t, map[string]Status{"a": Succeeded, "b": Succeeded, "c": Skipped, "d": Skipped}, statuses(outs))
	for _, id := range []string{"a", "b"} {
		err, _ := ctxErrs.Load(id)
		require.Nil(t, err, "drain must not cancel running %s", id)
	}
	for _, id := range []string{"c", "d"} {
		require.ErrorIs(t, outs[id].Err, ErrSkipped)
		require.ErrorIs(t, outs[id].Err, ErrStopped)
		require.EqualError(t, outs[id].Err, "skipped: stopped before it started")
		require.False(t, outs[id].Started)
	}
}

func TestRunDrainedBeforeStart(t *testing.T) {
	g := mkGraph(t, "a", "b:a")
	drain := make(chan struct{})
	close(drain)
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2}, drain, func(context.Context, string) error {
		t.Error("nothing may start after drain")
		return nil
	})
	require.Equal(t, map[string]Status{"a": Skipped, "b": Skipped}, statuses(outs))
	require.ErrorIs(t, outs["a"].Err, ErrStopped)
}

// TestRunDrainThenCancel is the second Ctrl-C: the running unit sees the
// cancellation, and what never started keeps the first reason, drain.
func TestRunDrainThenCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(testCtx(t))
	g := mkGraph(t, "a", "b:a")
	drain := make(chan struct{})
	outs := runQueue(t, ctx, g, nil, Policy{Parallelism: 2}, drain, func(ctx context.Context, id string) error {
		close(drain)
		cancel(errInterrupt)
		<-ctx.Done()
		return ctx.Err()
	})
	require.Equal(t, map[string]Status{"a": Canceled, "b": Skipped}, statuses(outs))
	require.ErrorIs(t, outs["a"].Err, errInterrupt)
	require.ErrorIs(t, outs["b"].Err, ErrStopped)
}

func TestRunUnselected(t *testing.T) {
	g := mkGraph(t, "a", "b:a", "c:b")
	sel := []bool{false, true, true}
	outs := runQueue(t, testCtx(t), g, sel, Policy{Parallelism: 2}, nil, func(_ context.Context, id string) error {
		if id == "a" {
			return errors.New("unselected unit ran")
		}
		return nil
	})
	require.Equal(t, map[string]Status{"b": Succeeded, "c": Succeeded}, statuses(outs))
}

// TestRunProperties runs random DAGs with random selections, failures and
// policies, and compares the statuses with a model computed from the
// definition; the harness checks the scheduling guarantees of every run.
func TestRunProperties(t *testing.T) {
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 11))
		ids, deps := randomDAG(rng, 1+rng.IntN(25))
		g, err := New(ids, deps)
		require.NoError(t, err)
		n := g.Len()
		sel := make([]bool, n)
		fail := make([]bool, n)
		for i := range n {
			sel[i] = rng.IntN(5) > 0
			fail[i] = rng.IntN(6) == 0
		}
		p := Policy{
			Parallelism:  1 + rng.IntN(5),
			Reverse:      rng.IntN(2) == 0,
			IgnoreOrder:  rng.IntN(6) == 0,
			IgnoreErrors: rng.IntN(4) == 0,
			FailFast:     rng.IntN(5) == 0,
		}
		t.Run(fmt.Sprintf("seed%d_n%d_%+v", seed, n, p), func(t *testing.T) {
			h := newHarness(g, sel, p)
			outs := g.Run(testCtx(t), sel, p, nil, h.run(func(_ context.Context, i int) error {
				if fail[i] {
					return errBoom
				}
				return nil
			}), h.done)
			h.check(t, outs)
			anyFailed := false
			for i, o := range outs {
				if o.Status == Failed {
					anyFailed = true
					require.True(t, fail[i])
				}
			}
			if p.FailFast && anyFailed {
				for i, o := range outs {
					if sel[i] && !o.Started {
						require.Equal(t, Skipped, o.Status)
						require.ErrorIs(t, o.Err, ErrFailFast)
					}
				}
				return
			}
			// Model: visit in an order where every unit comes after what it
			// waits for; a unit runs iff everything it waits for ran and
			// succeeded (or IgnoreErrors).
			want := make([]Status, n)
			var visit func(u int) Status
			visit = func(u int) Status {
				if want[u] != 0 {
					return want[u]
				}
				st := Succeeded
				if fail[u] {
					st = Failed
				}
				for w := range n {
					if h.waitsFor(u, w) {
						if ws := visit(w); ws != Succeeded && !(ws == Failed && p.IgnoreErrors) {
							st = Skipped
						}
					}
				}
				want[u] = st
				return st
			}
			for i := range n {
				if !sel[i] {
					continue
				}
				require.Equal(t, visit(i), outs[i].Status, "%s: %v", g.ID(i), outs[i].Err)
				if outs[i].Status == Skipped {
					require.ErrorIs(t, outs[i].Err, ErrDependencyFailed)
					// The named unit failed and is one this unit waits for.
					var named int = -1
					for w := range n {
						if outs[i].Err.Error() == fmt.Sprintf("skipped: dependency failed: %s did not succeed", g.ID(w)) {
							named = w
						}
					}
					require.GreaterOrEqual(t, named, 0, outs[i].Err.Error())
					require.Equal(t, Failed, outs[named].Status)
					require.True(t, h.waitsFor(i, named))
				}
			}
		})
	}
}

// TestRunDrainThenFailure: a fails after the drain; what waits for it
// keeps the drain's reason, and fail-fast still interrupts b, which was
// left running.
func TestRunDrainThenFailure(t *testing.T) {
	g := mkGraph(t, "a", "b", "c:a")
	drain := make(chan struct{})
	bStarted := make(chan struct{})
	outs := runQueue(t, testCtx(t), g, nil, Policy{Parallelism: 2, FailFast: true}, drain, func(ctx context.Context, id string) error {
		switch id {
		case "a":
			<-bStarted
			close(drain)
			return errBoom
		case "b":
			close(bStarted)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	require.Equal(t, map[string]Status{"a": Failed, "b": Canceled, "c": Skipped}, statuses(outs))
	require.ErrorIs(t, outs["b"].Err, ErrFailFast)
	require.EqualError(t, outs["c"].Err, "skipped: stopped before it started")
}

func TestRunNilDone(t *testing.T) {
	g := mkGraph(t, "a", "b:a")
	outs := g.Run(testCtx(t), nil, Policy{Parallelism: 1}, nil, func(context.Context, int) error { return nil }, nil)
	require.Equal(t, []Outcome{{Status: Succeeded, Started: true}, {Status: Succeeded, Started: true}}, outs)
}
