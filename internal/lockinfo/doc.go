// Package lockinfo reads the engine's state-lock error: whether a failure
// is one, who holds the lock, and the command that releases it by hand.
// It is pure: it parses text and builds text, and never runs the engine,
// waits or reads the host (waiting out a lock, and telling this run's own
// lock info from a holder's, are the runner's).
//
// Guarantees:
//
//   - IsLocked recognizes the lock error of every backend by Marker,
//     the one phrase terraform and OpenTofu print for it.
//   - Parse reads the "Lock Info:" block (ID, Path, Operation, Who,
//     Version, Created, Info) as terraform and OpenTofu print it, the
//     creation time in any zone; a block without an ID is no lock, and a
//     field it cannot read stays zero rather than failing the rest.
//   - Holder never takes the failed attempt's own lock info for the
//     holder's where the backend says otherwise: the http backend names
//     the holder only as "ID=...", which wins over a block with another
//     ID; it says when the answer is sure, and when a block may still be
//     the attempt's own. A backend that names no holder (pg) gives nil.
//   - ForceUnlockCommand is one line a user can paste into a POSIX shell:
//     every part that needs it is quoted, so paths and IDs with spaces,
//     quotes or shell syntax come through as they are, and the lock ID
//     follows "--".
package lockinfo
