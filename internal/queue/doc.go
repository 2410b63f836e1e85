// Package queue is the run queue of the runner: the dependency graph of
// the units, which units take part (filters and shards), the order they
// run in, and the scheduling policy (parallelism, fail-fast, ignore
// errors, ignore order, drain). It has no execution code: it never runs
// terraform or touches a file; the caller hands Run a function per unit.
// Modelled on Terragrunt's internal/queue.
//
// A unit is an index into the IDs given to New. The flow is
//
//	g, err := queue.New(ids, deps)          // validate
//	sel, err := g.Select(filter, i, n)      // which units
//	waves := g.Waves(sel, policy)           // dry run
//	outcomes := g.Run(ctx, sel, policy, drain, run, done)
//
// Guarantees:
//
//   - Invalid input is refused before anything runs, with an error that
//     wraps a sentinel of errors.go and names the input: an empty ID, a
//     duplicate ID, a unit depending on itself, an unknown dependency, a
//     cycle (the path, a -> b -> a), a bad or empty filter pattern, a
//     pattern (include or exclude) that matches no unit of the graph, a
//     shard index out of range.
//   - Nothing depends on the order units are given in: waves, start
//     order, shards and error messages follow the IDs.
//   - Filters and shards only select; they never reorder. A dependency
//     path through unselected units still orders its selected ends.
//     Shards never split a connected group of dependent units, are
//     balanced by unit count, and together hold every unit exactly once.
//   - Waves is exactly the order Run honours: every unit comes after all
//     it waits for (its dependencies, or its dependents under Reverse).
//   - Run starts a unit as soon as everything it waits for is done, never
//     more than Parallelism at once, and only after done has returned for
//     everything it waits for. An Admit hook (the runner's memory
//     budget) may hold the next unit back while others run; it never
//     reorders, and with nothing running the next unit starts. done is called exactly once per selected
//     unit, never concurrently. A failure skips only what waits for the
//     failed unit (unless IgnoreErrors); FailFast stops everything and
//     cancels the running units' context with a cause naming the unit.
//     Closing drain starts nothing more and lets running units finish
//     untouched; ending ctx reaches running units through their context.
//   - Run returns only after every goroutine it started has ended.
package queue
