// Package format is the one rule every record and bundle the SDK writes
// follows across releases (DESIGN invariant 22): two releases meet in the
// field (a fleet upgrades its plan job before its apply jobs, two CI jobs
// of different releases share a machine's workdir root), so each record
// names the version of its format, and a reader tells an older format
// from a newer one by that number, never by guessing from its fields.
//
// Guarantees:
//
//   - A record whose version is newer than the reader's is refused by
//     name: a *NewerError ("written by a newer release: format N; this
//     release reads up to M; upgrade this job"), which matches ErrNewer
//     through errors.Is. It is never called damaged, and the reader that
//     refused it never overwrites it: the records that only steer (the
//     memory record) are done without for the Run, with one warning; a
//     record a unit's safety rests on (its stamp, init, applied, journal
//     and saved plan records, an adoption) fails that unit by name.
//   - A record that names no version was written before records named
//     one: it is version 1 (Version).
//   - Every change to what a record holds, or to what its digest covers,
//     bumps its version: the golden fixtures in testdata, written by the
//     releases in git history (testdata/README.md), are read by this
//     release's code in tests.
package format
