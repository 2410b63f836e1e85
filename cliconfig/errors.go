package cliconfig

import (
	"errors"
	"fmt"
)

// ErrInvalid: a CLI config file that Terraform would refuse, or a
// provider_installation a reader of it cannot follow. It comes in an
// *Error naming the file and the line.
var ErrInvalid = errors.New("invalid CLI config")

// Error says which CLI config file, and which line of it, a problem is
// in (Line is 0 when it cannot be told). It wraps ErrInvalid.
type Error struct {
	Path string
	Line int
	Msg  string
}

// Error names the file, the line and the problem.
func (e *Error) Error() string {
	if e.Path == "" { // a File built in code
		return fmt.Sprintf("%s: %s", ErrInvalid, e.Msg)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s %s, line %d: %s", ErrInvalid, e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s %s: %s", ErrInvalid, e.Path, e.Msg)
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }
