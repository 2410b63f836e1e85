//go:build !linux && !windows

package atomicfile

import "syscall"

func syncAll() { syscall.Sync() }
