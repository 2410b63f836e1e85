//go:build !linux

package runner

import "syscall"

// reapLeftovers finds nothing where there is no /proc to search; see
// reap_linux.go.
func reapLeftovers(dataDir string) []string { return nil }

// setDeathSignal has no counterpart outside Linux.
func setDeathSignal(*syscall.SysProcAttr) {}
