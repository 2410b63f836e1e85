//go:build !unix

package main

import (
	"context"
	"errors"
	"io"

	"github.com/tfisolate/tfisolate/internal/demo"
)

// compare needs process groups and rusage, which this platform lacks.
func compare(context.Context, io.Writer, *options, string, string, *demo.Provider) error {
	return errors.New("-compare is supported on Unix systems only")
}
