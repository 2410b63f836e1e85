// Package store is the one cross-process mechanism under every on-disk
// store of the SDK (pluginc's provider cache, internal/modstore's module
// store): per-key locks in a directory of lock files, the naming of temp
// files and dirs after their key, putting a finished temp tree into place,
// and sweeping what dead processes left. Deduplication within a process
// is internal/flight's; what an entry holds and how it is recorded and
// verified is the caller's (internal/treesum).
//
// The protocol a store follows for a key, and what this package
// guarantees of its part:
//
//   - One holder per key across goroutines and processes: Locks.Lock
//     takes the key's flock (one lock file per key, in the locks dir);
//     a second holder, in this process or another, waits. A process that
//     dies releases its locks with it (the kernel drops flocks with their
//     last open file), so a crash never leaves a key locked.
//   - Every wait is bounded: Lock waits for as long as its context
//     allows and no longer, and says so in its error (which wraps the
//     context's error); it never waits without a context.
//   - Lock files are never deleted: removing one would let two processes
//     hold "the" lock of a key on two different inodes.
//   - Temp files and dirs of a key are named TempPrefix(key) + a suffix
//     and are created only by the holder of the key's lock, so while it
//     holds the lock every other one is a dead process's leftover:
//     SweepKey removes them. The caller writes an entry into a temp name,
//     records it, syncs it, and Commit renames it into its final place
//     and syncs the directory: a reader sees no entry or a whole one,
//     never a torn one.
//   - Sweeping takes nothing a live holder owns: SweepFree sweeps a key
//     only while it holds the key's lock itself (TryLock: it never waits,
//     and leaves a key that is busy right now to its holder); a name it
//     cannot tell the key of, or whose key has no lock file, is not the
//     store's and is left alone.
//   - A private dir that a sweep removes when its lock is free (a Run's
//     dir, an engine detection's) never looks free while its process
//     lives: LockedTempDir names it only once its lock is held.
package store
