package modstore

import "errors"

// Sentinel errors. Every error this package returns for one of these
// causes wraps it, so errors.Is works through any layer (a fill error
// shared with another Get arrives inside a *flight.Error, which unwraps).
var (
	// ErrInvalidDir: Open was given an empty path or a path that exists
	// but is not a directory.
	ErrInvalidDir = errors.New("invalid store directory")
	// ErrInvalidKey: Get was given an empty key.
	ErrInvalidKey = errors.New("invalid key")
	// ErrNilFill: Get was given a nil fill function.
	ErrNilFill = errors.New("nil fill function")
	// ErrFill: the fill function failed. The error names the key and also
	// wraps fill's own error. Nothing was stored.
	ErrFill = errors.New("fill failed")
	// ErrBadTree: fill succeeded but left something the store cannot hold
	// (a FIFO, socket or device, or an unreadable file). The error names
	// the path inside the tree. Nothing was stored.
	ErrBadTree = errors.New("tree cannot be stored")
	// ErrDamagedEntry: an entry that no longer matches its manifest could
	// not be moved out of the way. The error names the entry and what is
	// wrong with it. It was not handed out.
	ErrDamagedEntry = errors.New("damaged entry")
)
