//go:build !unix

package demo

import (
	"context"
	"errors"
	"io"
	"time"
)

// Compare needs process groups and rusage, which this platform lacks.
func (o *Offline) Compare(context.Context, io.Writer, string, int, time.Duration) error {
	return errors.New("-compare is supported on Unix systems only")
}
