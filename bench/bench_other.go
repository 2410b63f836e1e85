//go:build !unix

package main

import (
	"context"
	"errors"
	"io"
)

// bench needs process groups and getrusage, which this platform lacks.
func bench(context.Context, *options, io.Writer) error {
	return errors.New("bench runs on Unix systems only")
}
