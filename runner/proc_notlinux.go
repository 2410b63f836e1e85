//go:build !linux

package runner

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has no counterpart outside Linux: an engine a dead host
// started runs on to its end (its output goes to files, so it is never
// killed by a lost reader).
func setDeathSignal(*syscall.SysProcAttr) {}

// starter starts engines from the calling goroutine where there is no
// thread-bound death signal to protect.
type starter struct{}

func newStarter() *starter { return &starter{} }

func (s *starter) start(cmd *exec.Cmd) error { return cmd.Start() }

func (s *starter) close() {}

// procStartTime is unknown without /proc.
func procStartTime(int) uint64 { return 0 }
