package modstore

import (
	"errors"
	"fmt"
	"io/fs"
)

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

// ErrUnsafePath: the store directory, a directory above it or a directory
// of the store's own (DIR/.modstore and its locks and tmp dirs) that
// someone other than the effective user or root owns or can write to, so
// what is in it could be theirs. It comes in an *UnsafePathError naming
// the path, its owner and its mode. (An entry such a user could have
// written, in a store that passes, is not refused: it is refilled into a
// private entry, see Get.)
var ErrUnsafePath = errors.New("unsafe module store path")

// UnsafePathError is a path the store refuses to trust. It wraps
// ErrUnsafePath.
type UnsafePathError struct {
	Path     string
	UID, GID int         // the path's owner and group
	Mode     fs.FileMode // the path's type and permission bits
	Why      string      // what is wrong with it
}

// Error names the path, its owner, group and mode, what is wrong and
// what to do about it.
func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("%s %s (owner uid %d, group gid %d, mode %s): %s; make it yours and writable by no one else "+
		"(chown, chmod go-w), or use a private dir (such as one under os.UserCacheDir)", ErrUnsafePath, e.Path, e.UID, e.GID, e.Mode, e.Why)
}

// Unwrap returns ErrUnsafePath.
func (e *UnsafePathError) Unwrap() error { return ErrUnsafePath }
