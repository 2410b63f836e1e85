package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// job is one unit's run, handed to the execution function.
type job struct {
	idx  int
	cmd  Command
	unit *Unit
	res  *Result
	emit func(Phase) // reports a new phase of this unit as Running
}

// execFunc runs one unit. It fills in res's LockWait, LockHolder,
// HasChanges and Log; the scheduler sets Unit, Status, Err and Duration.
type execFunc func(ctx context.Context, j *job) error

// emitter serializes event delivery so callbacks never run concurrently.
type emitter struct {
	mu sync.Mutex
	fn func(Event)
}

func (e *emitter) emit(ev Event) {
	if e.fn == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Time = time.Now()
	e.fn(ev)
}

// selection returns which units take part: those on this shard that pass
// the filters.
func (r *Runner) selection(g *graph) []bool {
	sel := make([]bool, len(g.ids))
	var shard []int
	if r.shardCount > 1 {
		shard = g.shards(r.shardCount)
	}
	for i, id := range g.ids {
		sel[i] = (shard == nil || shard[i] == r.shardIndex) && r.filter.match(id)
	}
	return sel
}

// order returns, for every selected unit, the units that must finish
// before it starts under cmd.
func (r *Runner) order(g *graph, sel []bool, cmd Command) [][]int {
	if r.ignoreOrder {
		return make([][]int, len(g.ids))
	}
	return g.edges(sel, cmd == Destroy)
}

// schedule runs the selected units through exec, at most r.parallelism at
// once, and returns their results in the units' order. It returns only
// after every goroutine it started has finished.
func (r *Runner) schedule(ctx context.Context, cmd Command, units []Unit, g *graph, exec execFunc) []Result {
	sel := r.selection(g)
	before := r.order(g, sel, cmd)
	after := make([][]int, len(g.ids))
	remaining := make([]int, len(g.ids))
	for i, bs := range before {
		remaining[i] = len(bs)
		for _, b := range bs {
			after[b] = append(after[b], i)
		}
	}
	results := make([]Result, len(g.ids))
	final := make([]bool, len(g.ids)) // the loop has decided: started or never will
	em := &emitter{fn: r.events}

	var ready []int
	for _, i := range g.sorted() {
		if !sel[i] {
			continue
		}
		results[i] = Result{Unit: g.ids[i], Status: Queued}
		em.emit(Event{Unit: g.ids[i], Phase: PhaseQueued, Status: Queued})
		if remaining[i] == 0 {
			ready = append(ready, i)
		}
	}

	// finish is called by the scheduler loop for units that never start,
	// and by a unit's own goroutine when it ends; final is only ever
	// written by the loop.
	finish := func(i int, st Status, err error) {
		results[i].Status, results[i].Err = st, err
		em.emit(Event{Unit: g.ids[i], Phase: PhaseDone, Status: st, Err: err})
	}
	// skip marks everything downstream of a failed unit as Skipped.
	var skip func(i int, root string)
	skip = func(i int, root string) {
		for _, d := range after[i] {
			if final[d] {
				continue
			}
			final[d] = true
			finish(d, Skipped, fmt.Errorf("%w: %w: %s did not succeed", ErrSkipped, ErrDependencyFailed, root))
			skip(d, root)
		}
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	done := make(chan int)
	running := 0
	var stopped error // set when fail-fast stopped the run
	for {
		for running < r.parallelism && len(ready) > 0 && stopped == nil && ctx.Err() == nil {
			i := ready[0]
			ready = ready[1:]
			if final[i] {
				continue
			}
			final[i] = true // from here on only its goroutine writes its result
			running++
			results[i].Status = Running
			go func() {
				res := &results[i]
				id := g.ids[i]
				em.emit(Event{Unit: id, Phase: PhasePrepare, Status: Running})
				start := time.Now()
				j := &job{idx: i, cmd: cmd, unit: &units[i], res: res, emit: func(p Phase) {
					em.emit(Event{Unit: id, Phase: p, Status: Running})
				}}
				err := exec(runCtx, j)
				res.Duration = time.Since(start)
				st := Succeeded
				switch {
				case err == nil:
				case runCtx.Err() != nil:
					st = Canceled
					if cause := context.Cause(runCtx); !errors.Is(err, cause) {
						err = fmt.Errorf("%w: %w", cause, err)
					}
				default:
					st = Failed
				}
				finish(i, st, err)
				done <- i
			}()
		}
		if running == 0 {
			break
		}
		i := <-done
		running--
		st := results[i].Status
		if st == Failed && r.failFast && stopped == nil {
			// Fail-fast wins over WithIgnoreErrors: nothing new starts.
			stopped = fmt.Errorf("%w: %s failed", ErrFailFast, g.ids[i])
			stop(stopped)
		}
		switch {
		case st == Succeeded || r.ignoreErrors:
			var next []int
			for _, d := range after[i] {
				if remaining[d]--; remaining[d] == 0 && !final[d] {
					next = append(next, d)
				}
			}
			ready = append(ready, next...)
			g.sortByID(ready)
		case st == Failed && stopped == nil:
			skip(i, g.ids[i])
		}
		// Otherwise the run is stopping (ctx or fail-fast): what is left
		// is reported below with that reason rather than as a skip.
	}
	// Whatever is left never started: stopped by fail-fast or by ctx.
	for _, i := range g.sorted() {
		if !sel[i] || final[i] {
			continue
		}
		final[i] = true
		switch {
		case stopped != nil:
			finish(i, Skipped, fmt.Errorf("%w: %w", ErrSkipped, stopped))
		case ctx.Err() != nil:
			finish(i, Canceled, fmt.Errorf("not started: %w", context.Cause(ctx)))
		default:
			// Unreachable with a validated graph; never report it as success.
			finish(i, Failed, fmt.Errorf("%w: %s was never scheduled", ErrInvalidUnit, g.ids[i]))
		}
	}
	out := make([]Result, 0, len(g.ids))
	for i := range g.ids {
		if sel[i] {
			out = append(out, results[i])
		}
	}
	return out
}

// waves groups the selected units into the order a command would use:
// every unit in a wave depends only on units in earlier waves. Within a
// wave IDs are sorted. The scheduler does not wait for whole waves (a unit
// starts as soon as what it depends on is done); waves are the dry-run
// view of that order.
func (r *Runner) waves(g *graph, cmd Command) [][]string {
	sel := r.selection(g)
	before := r.order(g, sel, cmd)
	level := make([]int, len(g.ids))
	var depth func(i int) int
	depth = func(i int) int {
		if level[i] == 0 {
			l := 1
			for _, b := range before[i] {
				l = max(l, depth(b)+1)
			}
			level[i] = l
		}
		return level[i]
	}
	var out [][]string
	for _, i := range g.sorted() {
		if !sel[i] {
			continue
		}
		l := depth(i)
		for len(out) < l {
			out = append(out, nil)
		}
		out[l-1] = append(out[l-1], g.ids[i])
	}
	for _, w := range out {
		slices.SortFunc(w, strings.Compare)
	}
	return out
}
