//go:build unix

package main

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// selfCPU is this process's user+system time so far.
func selfCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// childCPU is the user+system time of this process's waited-for children
// (and of their waited-for descendants) so far.
func childCPU() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func commandOutput(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), "CHECKPOINT_DISABLE=1")
	return cmd.Output()
}
