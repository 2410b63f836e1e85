package treesum

import "errors"

// Sentinel errors. Every error this package returns for one of these
// causes wraps it, so errors.Is works through any layer.
var (
	// ErrNotDir: the root given to Record, Scan, Check or Verify is not a
	// directory (a symlink to a directory is not one either).
	ErrNotDir = errors.New("not a directory")
	// ErrSpecialFile: a path in the tree is neither a directory, a regular
	// file nor a symlink. The error names the path inside the tree.
	ErrSpecialFile = errors.New("not a regular file, directory or symlink")
	// ErrBadRecord: a Tree is not one Record could have made (unsorted or
	// repeated paths, a path that escapes the root, a regular file without
	// a SHA-256, a symlink without a target, an unknown type). The error
	// names the path.
	ErrBadRecord = errors.New("bad tree record")
)
