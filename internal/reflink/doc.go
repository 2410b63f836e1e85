// Package reflink copies file contents copy-on-write where the filesystem can
// (FICLONE on Linux: btrfs, XFS, bcachefs, overlay on those) and falls back to
// a plain byte copy everywhere else. It never hard-links: the destination is
// always a distinct inode, so writing it can never modify the source.
package reflink
