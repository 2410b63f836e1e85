// Package atomicfile writes files so that readers in any process see either
// the old content or the complete new content, never a torn file.
//
// A File is a temp file created in the target's own directory (so the final
// rename never crosses filesystems). The writer fills it, then calls
// CloseAtomicallyReplace, which fsyncs, closes and renames it over the
// target and fsyncs the directory. Cleanup, deferred right after New, removes
// the temp file on every path that did not reach the rename; it is a no-op
// after a successful replace. A process killed mid-write leaves at most a
// stray temp file named ".tmp-NAME-*", never a partial target.
//
// Records the SDK keeps for itself are Record (0600) in RecordDir (0700)
// dirs: MkdirPrivate makes such a dir, and Narrow and ReadFile take the
// extra bits from one an older release left wider (0644, 0755), never
// adding any and never following a link.
package atomicfile
