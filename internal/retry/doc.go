// Package retry repeats a call that failed in a way known to pass: the
// loop, its waits, and the tests of which failures may be repeated. What
// counts as transient is the caller's list of patterns (the runner's
// RetryPolicy and DefaultTransientErrors); this package holds no list of
// its own.
//
// Guarantees:
//
//   - Do calls its function at most 1 + Max times, and repeats it only
//     after a failure that Transient matches, as the engine printed it or
//     with the engine's line wrapping undone (an engine wraps a
//     diagnostic to the terminal width, so a phrase may break anywhere).
//   - Never twice after a change: a failure after which infrastructure
//     may differ from the state (MayHaveChanged: the engine had reported
//     a resource operation or provisioner, or could not save the state)
//     is returned at once, however transient it looks.
//   - Waits double from Backoff up to MaxBackoff and are each spread at
//     random over 80-120 % of that, so callers throttled together do not
//     come back at the same moment. A done context ends a wait at once,
//     and no repeat starts after it.
//   - Do returns the last error fn returned, unchanged (errors.Is and
//     errors.As see through it), and starts no goroutine: its timer is
//     stopped or has fired when it returns.
package retry
