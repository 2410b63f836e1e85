//go:build unix

package runner

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttrs puts terraform in a process group of its own, so a
// terminal's Ctrl-C reaches it only through the runner, which sends
// SIGINT itself and kills after the grace period.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// interruptProcess asks terraform to stop: it then stops its operation,
// writes state and releases its state lock.
func interruptProcess(p *os.Process) error { return p.Signal(os.Interrupt) }
