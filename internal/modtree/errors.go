package modtree

import "errors"

var (
	// ErrParse is wrapped by Module.Err when a module's files have
	// errors; what parsed is still in Module.Config and followed.
	ErrParse = errors.New("module has errors")

	// ErrMissing is wrapped by Module.Err when a local source names a
	// directory that does not exist (or is not a directory).
	ErrMissing = errors.New("local module directory does not exist")

	// ErrCycle is wrapped by the error Tree.Err reports for a call that
	// leads back to one of its own callers.
	ErrCycle = errors.New("module calls itself")

	// ErrBackend is wrapped by the error ReadBackend returns when the
	// backend configuration cannot be read statically.
	ErrBackend = errors.New("unreadable backend configuration")
)
