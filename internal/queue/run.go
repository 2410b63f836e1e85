package queue

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Outcome is the final result of one selected unit in a Run.
type Outcome struct {
	// Status is how the unit ended.
	Status Status
	// Err is nil for Succeeded. For a unit that ran it is run's error
	// (wrapping the context's cause when Canceled); for one that never
	// started it wraps ErrSkipped and the reason, or the context's cause.
	Err error
	// Started reports that run was called for this unit.
	Started bool
	// SkippedFor is, for a unit Skipped because a unit it depends on
	// (directly or not) failed, that unit's ID; "" otherwise.
	SkippedFor string
}

// Run runs the selected units (sel from Select; nil means all) under p and
// returns their outcomes indexed like the graph (the zero Outcome for
// unselected units). It returns only after every goroutine it started has
// ended.
//
// run(ctx, i) is called in its own goroutine, at most p.Parallelism at
// once; a unit starts as soon as every unit it waits for is done (its
// dependencies, its dependents under Reverse, none under IgnoreOrder),
// never waiting for a whole wave, and p.Admit (if set) lets it. Ready
// units start in ID order. The ctx given to run is derived from ctx.
//
// done (may be nil) is called exactly once for every selected unit, when
// its outcome is final: from the unit's goroutine after run returns, or
// from Run's own goroutine for a unit that never starts. Calls to done never
// overlap (Run serializes them), and run for a unit is called only after
// done has returned for every unit it waits for, so done may record
// results that a dependent's run then reads without further locking.
//
// Outcomes: run returning nil is Succeeded; an error while the run's
// context is done is Canceled (the error wraps the context's cause); any
// other error is Failed. The units that wait for a failed unit, directly
// or transitively, are Skipped with an error wrapping ErrSkipped and
// ErrDependencyFailed that names it, unless p.IgnoreErrors. Under
// p.FailFast the first failure stops the run: nothing new starts, the
// running units' context is cancelled with a cause wrapping ErrFailFast
// that names the unit, and every unit not started is Skipped with an error
// wrapping ErrSkipped and ErrFailFast.
//
// Closing drain (may be nil) asks for a graceful stop, the first step of a
// Ctrl-C ladder: no new unit starts, running units finish normally (their
// context is not cancelled), and every unit not started is Skipped with an
// error wrapping ErrSkipped and ErrStopped (FailFast still applies to
// the units left running). When ctx ends, running units see it through
// their context and units not started are Canceled with
// "not started: <cause>". Whichever stop Run notices first gives the
// reason for every unit left, including those waiting for a unit that
// fails after the stop.
func (g *Graph) Run(ctx context.Context, sel []bool, p Policy, drain <-chan struct{},
	run func(ctx context.Context, i int) error, done func(i int, o Outcome)) []Outcome {
	sel = g.selection(sel)
	n := len(g.ids)
	before := g.waitsFor(sel, p)
	after := make([][]int, n) // after[b]: the selected units waiting for b
	remaining := make([]int, n)
	// ready holds the units that may start, in ID order at any time: a
	// heap, so each unit costs O(log n) to add and take, never a re-sort.
	ready := &readyHeap{rank: g.rank}
	for _, i := range g.sorted() {
		if !sel[i] {
			continue
		}
		remaining[i] = len(before[i])
		for _, b := range before[i] {
			after[b] = append(after[b], i)
		}
		if remaining[i] == 0 {
			ready.units = append(ready.units, i) // in ID order: a valid heap
		}
	}

	out := make([]Outcome, n)
	// final[i]: Run has decided unit i's fate (started, or settled without
	// starting). Only Run's own goroutine reads or writes it.
	final := make([]bool, n)
	var mu sync.Mutex
	report := func(i int, o Outcome) {
		if done == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done(i, o)
	}
	settle := func(i int, o Outcome) {
		final[i] = true
		out[i] = o
		report(i, o)
	}

	// Why nothing new starts any more, and what the units left get.
	var stopStatus Status
	var stopErr error
	failFastHit := false
	checkStop := func() {
		if stopErr != nil {
			return
		}
		select {
		case <-drain:
			stopStatus, stopErr = Skipped, fmt.Errorf("%w: %w", ErrSkipped, ErrStopped)
			return
		default:
		}
		if ctx.Err() != nil {
			stopStatus, stopErr = Canceled, fmt.Errorf("not started: %w", context.Cause(ctx))
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	par := max(p.Parallelism, 1)
	finished := make(chan int)
	var wg sync.WaitGroup
	running := 0
	start := func(i int) {
		final[i] = true // from here on only its goroutine writes out[i]
		running++
		wg.Go(func() {
			err := run(runCtx, i)
			o := Outcome{Status: Succeeded, Err: err, Started: true}
			switch {
			case err == nil:
			case runCtx.Err() != nil:
				o.Status = Canceled
				if cause := context.Cause(runCtx); !errors.Is(err, cause) {
					o.Err = fmt.Errorf("%w: %w", cause, err)
				}
			default:
				o.Status = Failed
			}
			out[i] = o
			report(i, o)
			finished <- i
		})
	}

	drainC, ctxDone := drain, ctx.Done()
	for {
		for checkStop(); stopErr == nil && running < par && ready.Len() > 0; checkStop() {
			i := ready.units[0] // the heap's head: next in ID order
			if final[i] {
				heap.Pop(ready)
				continue
			}
			if p.Admit != nil && !p.Admit(i, running) && running > 0 {
				break // asked again when a unit ends
			}
			heap.Pop(ready)
			start(i)
		}
		if running == 0 {
			break
		}
		var i int
		select {
		case i = <-finished:
		case <-drainC:
			drainC = nil // noticed; checkStop records it
			continue
		case <-ctxDone:
			ctxDone = nil
			continue
		}
		running--
		// A drain or cancellation that happened before this unit ended
		// counts as the earlier stop.
		checkStop()
		o := out[i]
		if o.Status == Failed && p.FailFast && !failFastHit {
			failFastHit = true
			ff := fmt.Errorf("%w: %s failed", ErrFailFast, g.ids[i])
			cancel(ff)
			if stopErr == nil {
				stopStatus, stopErr = Skipped, fmt.Errorf("%w: %w", ErrSkipped, ff)
			}
		}
		switch {
		case o.Status == Succeeded || p.IgnoreErrors:
			// Releasing after a stop is harmless: nothing new starts.
			for _, a := range after[i] {
				if remaining[a]--; remaining[a] == 0 && !final[a] {
					heap.Push(ready, a)
				}
			}
		case o.Status == Failed && stopErr == nil:
			err := fmt.Errorf("%w: %w: %s did not succeed", ErrSkipped, ErrDependencyFailed, g.ids[i])
			for _, d := range g.downstream(i, after, final) {
				settle(d, Outcome{Status: Skipped, Err: err, SkippedFor: g.ids[i]})
			}
		}
		// Otherwise (Canceled, or a failure once the run is stopping:
		// fail-fast, drain or ctx) what waits for it is settled below
		// with the stop's reason.
	}

	// Whatever is left never started.
	checkStop()
	for _, i := range g.sorted() {
		if !sel[i] || final[i] {
			continue
		}
		if stopErr == nil {
			// Unreachable with a validated graph; never report it as success.
			settle(i, Outcome{Status: Failed, Err: fmt.Errorf("%w: %s was never scheduled", ErrInvalidUnit, g.ids[i])})
			continue
		}
		settle(i, Outcome{Status: stopStatus, Err: stopErr})
	}
	wg.Wait()
	return out
}

// readyHeap is a min-heap of unit indexes by their rank in ID order.
type readyHeap struct {
	rank  []int // rank[i]: unit i's position in ID order
	units []int
}

func (h *readyHeap) Len() int           { return len(h.units) }
func (h *readyHeap) Less(a, b int) bool { return h.rank[h.units[a]] < h.rank[h.units[b]] }
func (h *readyHeap) Swap(a, b int)      { h.units[a], h.units[b] = h.units[b], h.units[a] }
func (h *readyHeap) Push(x any)         { h.units = append(h.units, x.(int)) }
func (h *readyHeap) Pop() any {
	last := h.units[len(h.units)-1]
	h.units = h.units[:len(h.units)-1]
	return last
}

// downstream returns, sorted by ID, the units not yet final that wait for
// i directly or transitively.
func (g *Graph) downstream(i int, after [][]int, final []bool) []int {
	seen := map[int]bool{}
	stack := slices.Clone(after[i])
	var found []int
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if !final[d] {
			found = append(found, d)
		}
		stack = append(stack, after[d]...)
	}
	g.sortByID(found)
	return found
}
