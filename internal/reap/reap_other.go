//go:build !linux

package reap

import (
	"context"
	"time"
)

// Supported reports whether this platform can find leftovers and wait
// for them: outside Linux it cannot (no /proc, no pidfd), and nothing is
// ever found, waited for or killed.
const Supported = false

// Find finds nothing outside Linux.
func (Group) Find() []Process { return nil }

// Scan finds nothing outside Linux.
func Scan(string) []Process { return nil }

// Kill kills nothing outside Linux.
func Kill([]Process) []Process { return nil }

func waitGone(context.Context, []Process, time.Time) []Process { return nil }
