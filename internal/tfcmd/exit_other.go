//go:build !linux

package tfcmd

import "os"

// awaitExit returns at once: the caller's Wait waits.
func awaitExit(*os.Process) {}
