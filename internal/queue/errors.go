package queue

import "errors"

// Sentinels. Every error this package returns, and every error it puts in an
// Outcome for a unit that did not run, wraps one of them. The runner
// re-exports them under the same names, so their messages are part of the
// public surface.
var (
	// ErrInvalidUnit reports a unit that cannot be queued as given: an
	// empty ID, an ID with a control character, a unit depending on
	// itself, or dependency lists for more units than there are.
	ErrInvalidUnit = errors.New("invalid unit")
	// ErrDuplicateUnit reports two units with the same ID.
	ErrDuplicateUnit = errors.New("duplicate unit id")
	// ErrUnknownDependency reports a dependency naming no unit.
	ErrUnknownDependency = errors.New("unknown dependency")
	// ErrCycle reports a dependency cycle; the message names the cycle
	// path, a -> b -> a.
	ErrCycle = errors.New("dependency cycle")
	// ErrBadPattern reports a filter pattern that is empty or not a valid
	// glob; the message names the pattern.
	ErrBadPattern = errors.New("bad filter pattern")
	// ErrNoMatch reports a filter pattern (include or exclude) that matches
	// no unit of the graph at all; the message names the pattern. A
	// mistyped exclude must never silently mean "everything".
	ErrNoMatch = errors.New("filter pattern matches no unit")
	// ErrBadShard reports a shard index outside [0, count).
	ErrBadShard = errors.New("bad shard")
	// ErrSkipped is wrapped by the error of every selected unit that was
	// never started for a reason other than the run's context ending.
	ErrSkipped = errors.New("skipped")
	// ErrDependencyFailed is wrapped, with ErrSkipped, by the error of a
	// unit skipped because a unit it waits for (directly or transitively)
	// failed; the message names that unit.
	ErrDependencyFailed = errors.New("dependency failed")
	// ErrFailFast is the cause of the run context's cancellation under
	// Policy.FailFast (the message names the failed unit), and is wrapped,
	// with ErrSkipped, by the error of every unit that never started
	// because of it.
	ErrFailFast = errors.New("stopped by fail-fast")
	// ErrStopped is wrapped, with ErrSkipped, by the error of every unit
	// that never started because the drain channel was closed.
	ErrStopped = errors.New("stopped before it started")
)
