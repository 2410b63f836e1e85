// Package treesum records a directory tree and checks it against that
// record later: the one mechanism behind every "is this tree still what we
// verified?" in the SDK (pluginc's provider cache entries, modstore's
// module trees).
//
//	rec, err := treesum.Record(dir)           // at install: every path, hashed
//	b, _ := json.Marshal(rec)                  // kept beside the tree
//	...
//	_, changes, err := treesum.Check(dir, rec) // on every use: no file read
//	if changes.Stale() {                       // only stamps moved: hash to decide
//		now, changes, err = treesum.Verify(dir, rec)
//		// !changes.Damaged(): keep now as the new record
//	}
//
// Guarantees:
//
//   - A Tree lists every path below the root (not the root itself),
//     sorted by its slash-separated path in byte order, once each.
//     Directories, regular files and symlinks are recorded; anything
//     else (a named pipe, socket or device) makes Record, Scan, Check and
//     Verify fail with an error that wraps ErrSpecialFile and names the
//     path inside the tree, and is never opened. A root that is not a
//     directory (a symlink to one included) is refused with ErrNotDir.
//   - Symlinks are recorded, never followed: their target is part of the
//     record, and a link to itself, to its parent or in a loop with
//     another is just a link.
//   - Each Entry holds the path's mode (type and permission bits); a
//     regular file's size, SHA-256 and stamp; a symlink's target. Record
//     takes a regular file's mode, size and stamp from the file it opened
//     and hashed (opened without following links and without blocking),
//     so an entry describes one version of one file, and its stamp is
//     taken before its content is read: a write during or after the read
//     changes the stamp, so the next Check sees it.
//   - The stamp (inode, mtime and ctime on Linux and macOS; mtime
//     elsewhere) changes whenever a file is written, replaced or
//     chmodded. ctime cannot be set by a user, so a file whose mtime was
//     put back is still seen as changed, as far as the filesystem's
//     timestamp granularity allows: a rewrite that keeps the size within
//     one clock tick of the record can be missed by Check, never by
//     Verify.
//   - Check reads no file's content: it lists the tree (lstat and
//     readlink) and compares paths, types, modes, sizes, symlink targets
//     and stamps. Verify also reads and hashes every regular file.
//     Both report every difference (Changes, sorted by path; see Kind), a
//     stamp change only for a path where nothing else differs. A Changes
//     that is Stale (only stamps differ) after Verify means the content
//     is as recorded, and the tree Verify returned is the record to keep
//     from then on.
//   - Records are JSON with stable field names: path, mode (the numeric
//     fs.FileMode), size, sha256 (lowercase hex), target and stamp (ino,
//     mtime, ctime, in nanoseconds); size, sha256, target and stamp are
//     left out when zero. This is the format pluginc's install records
//     and modstore's manifests have always used, so records written
//     before this package existed read as they are.
//   - A Memo (the caller's, never a global) remembers file digests by
//     path and stamp so one process reads a file once for many callers:
//     it hands a digest out only while the file's stamp, size and mode
//     are those it was read at, and remembers none for a file changed
//     within a clock tick or so of the read (see Memo).
//   - Apart from a Memo, the package keeps no state, takes no locks and
//     writes nothing: the caller decides where a record lives and
//     serializes writers of it.
package treesum
