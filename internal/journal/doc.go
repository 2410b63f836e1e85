// Package journal keeps an instance's run journal: a small file in the
// instance's data dir that records, under the instance lock, the run of
// the instance under way and the terraform process it last started, and
// the earlier runs that never finished. Holding the instance lock proves
// the run that wrote "current" is gone (a flock dies with its process),
// so a run found current names a run that crashed, or whose terraform
// had to be killed; the journal is how the next run finds what that run
// may have left (an engine still running, a state lock) and tells it
// from anyone else's. It reads and writes the file only: finding and
// waiting for processes is internal/reap's.
//
// Guarantees:
//
//   - Begin moves a run found under way to the crashed list, dated
//     (Until) when it was found, and records the caller's run as
//     current; End clears it, or, when the caller's terraform had to be
//     killed, keeps it among the crashed with the killed engine's last
//     sign of life (never one from before that engine began). At most 8
//     crashed runs, none older than 7 days, are kept.
//   - A crash loses no record a later run needs: Begin's and
//     RecordEngine's writes, and End's when no crashed run remains, are
//     one in-place write of at most a page each (internal/inplace), so a
//     host killed mid-write leaves the old record or the new one; a
//     record larger than a page replaces the file atomically, and End
//     replaces it atomically and synced whenever crashed runs remain
//     (internal/atomicfile). A link at the journal's place is never
//     written through. An unreadable journal proves nothing: Begin reads
//     it as empty.
//   - LeftBy believes nothing another user wrote and nothing the journal
//     cannot prove: a state lock counts as a crashed run's only when the
//     lock, the run and this process have the same user and host (Who,
//     as terraform writes a lock's Who), and the lock was created no
//     earlier than that run's last terraform began (less a second of
//     clock slack), no later than two minutes after, and never after its
//     last proven sign of life (Alive, or the last write to its output
//     files), a lock time written to the second or millisecond taken at
//     the end of that second or millisecond. A run with no recorded
//     terraform, or no sign of life, left no lock.
//   - SweepOutputs removes only files of the engine output dir that no
//     crashed run names.
//   - The journal names its format version; a journal of a newer
//     release is refused by name (a *format.NewerError) and never
//     rewritten: what it proves this release cannot read. One that names
//     no version is an earlier release's, read as this one's.
//
// Callers hold the instance lock for every call: the journal is neither
// read nor written concurrently.
package journal
