// Package runner runs terraform over many root-module instances at once,
// each in its own isolated workdir, in dependency order.
//
// A Unit is one instance: a workdir.Spec (stack, instance, component
// source, generated files), an optional terraform workspace and the IDs of
// the units it depends on. Run validates the units (unique IDs, known
// dependencies, no cycle: the error names the cycle path), then runs a
// queue: a unit starts as soon as everything it depends on has succeeded
// (Destroy reverses the edges), at most WithParallelism units at once.
//
// Guarantees:
//
//   - Nothing runs when the input is invalid; the error wraps a sentinel
//     from errors.go and names the offending unit, dependency or pattern.
//   - A failed unit's dependents are Skipped with an error naming it;
//     independent branches go on. WithFailFast stops everything at the first
//     failure (running units are interrupted and reported Canceled),
//     WithIgnoreErrors runs dependents anyway, WithIgnoreDependencyOrder
//     makes every unit eligible at once.
//   - Filters (path.Match globs over unit IDs, "!" negates) and shards
//     (WithShard: connected groups of dependent units never split, shards
//     balanced by unit count, the union of all shards is every unit once)
//     only select units; they never reorder them. Plan shows the order
//     without running anything.
//   - Events are delivered one at a time, in order: every selected unit
//     sends PhaseQueued first and PhaseDone (with its final status) last.
//   - Run returns only after every goroutine and process it started has
//     ended.
package runner
