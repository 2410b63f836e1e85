package modserve

import "errors"

// Sentinel errors; every error of this package for one of these causes
// wraps it.
var (
	// ErrBadModule: a module address or version the server does not
	// serve as written (no host, a subdirectory, a version that is not
	// exact). The error names it.
	ErrBadModule = errors.New("bad module")
	// ErrNotFound: the upstream registry does not offer the module or
	// version.
	ErrNotFound = errors.New("module not found")
	// ErrUpstream: the upstream registry or its download location failed,
	// or pointed at a kind of download the server does not fetch.
	ErrUpstream = errors.New("upstream module download failed")
	// ErrBadArchive: an archive holds what no module tree may (a path
	// leaving the tree, a device, a link pointing out of it) or more than
	// the size limit.
	ErrBadArchive = errors.New("bad module archive")
	// ErrBadOption: an option was given a value it cannot take.
	ErrBadOption = errors.New("bad option")
)
