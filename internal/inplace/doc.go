// Package inplace rewrites a small record over an existing file in place,
// for records the SDK writes once or more per unit where a new file each
// time (a temp file and a rename) costs more than the record is worth: a
// file created on ext4 costs 0.15-0.3 ms of CPU, an in-place write of an
// existing file about 8 us.
//
// Guarantees:
//
//   - A write is one write at offset 0 of at most Page bytes, padded with
//     spaces to the file's size, so the file never grows or shrinks.
//     Linux copies a write within one page into the page cache whole
//     before a fatal signal can end the writer: a writer killed mid-write
//     leaves the old record or the new one.
//   - A link is never followed: the file is Lstat'ed, opened, and the
//     opened handle must be that same regular file.
//   - Rewrite writes nothing and reports false when it cannot keep these
//     (the file is missing, not a regular file, larger than Page, or too
//     small for the record); WriteFile then replaces the file whole,
//     atomically (internal/atomicfile), padded for the next record.
//   - With sync, the record is on disk (fsync) when Rewrite returns.
//   - A record is kept with the mode its writer asks for: a file an
//     older release left wider (0644) is narrowed, on the open handle,
//     before the write.
//
// Readers must not race a writer (a read may see a page being copied):
// the SDK's records are read and written under the instance lock. A
// record padded with spaces suits JSON, which allows trailing white
// space. A machine that loses power mid-write may tear the record at a
// sector: callers keep records whose damage reads as "no record".
package inplace
