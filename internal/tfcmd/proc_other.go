//go:build !unix

package tfcmd

import (
	"os"
	"os/exec"
)

// setProcAttrs has nothing to set where there are no process groups.
func setProcAttrs(*exec.Cmd) {}

// interruptProcess kills: Windows has no SIGINT to send to a process.
func interruptProcess(p *os.Process) error { return p.Kill() }

// A HostWatch has nothing to watch with where there is no SIGINT: the
// engine of a dead host runs on to its end.
type HostWatch struct{}

// Add does nothing here.
func (*HostWatch) Add(int) error { return nil }

// Remove does nothing here.
func (*HostWatch) Remove(int) {}

// Close does nothing here.
func (*HostWatch) Close() {}
