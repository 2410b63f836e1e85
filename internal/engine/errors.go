package engine

import "errors"

var (
	// ErrNotFound is returned by Find when no binary of the requested engine
	// is on PATH and none could be installed.
	ErrNotFound = errors.New("engine binary not found")

	// ErrUnknownKind is returned for a Kind that is neither Terraform nor
	// OpenTofu.
	ErrUnknownKind = errors.New("unknown engine kind")

	// ErrUnrecognized is returned by Detect when a binary runs but its
	// version output is neither Terraform's nor OpenTofu's.
	ErrUnrecognized = errors.New("unrecognized version output")

	// ErrUnsafeInstallDir is returned by Find when the dir it would
	// install terraform into (or take an installed one from), a dir
	// above it, or the binary in it is one another user owns or can
	// write to; the message names the path, its owner and mode.
	ErrUnsafeInstallDir = errors.New("unsafe terraform install dir")
)
