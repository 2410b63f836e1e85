//go:build !linux

package tfcmd

import (
	"io"
	"os"
)

// follow copies the engine's output once it has exited: there is no
// inotify to wake a live copy, and polling is not worth it.
func follow(r *os.File, w io.Writer) (stop func()) {
	return func() { _, _ = io.Copy(w, r) }
}
