//go:build !unix

package engine

import "os/exec"

// setProcessGroup leaves cmd as is: without process groups, cancellation
// kills the process itself (exec.CommandContext's default).
func setProcessGroup(cmd *exec.Cmd) {}
