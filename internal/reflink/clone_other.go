//go:build !linux

package reflink

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("reflink: not supported on this platform")

func clone(dst, src *os.File) error { return errUnsupported }
