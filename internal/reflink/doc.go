// Package reflink copies file contents copy-on-write where the filesystem
// can (FICLONE on Linux: btrfs, XFS, bcachefs, overlay on those) and
// otherwise copies the data segments only (SEEK_DATA and SEEK_HOLE, so
// holes stay holes), or every byte where the platform cannot say where
// the data is. It never hard-links: the destination is always a distinct
// inode, so writing it can never modify the source. CopyTree copies a
// whole tree (directories, regular files, symlinks) the same way.
package reflink
