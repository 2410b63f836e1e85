//go:build !linux

package runner

import (
	"context"
	"os"
	"time"
)

// leftover is a process a run left running; none are found outside Linux
// (see reap_linux.go).
type leftover struct {
	pid    int
	exe    string
	engine bool
	f      *os.File
}

func (l leftover) String() string { return "" }

func closeLeftovers([]leftover) {}

func groupLeftovers(int, uint64, string, []string) []leftover { return nil }

func waitGone(context.Context, []leftover, time.Time) []leftover { return nil }

func killLeftovers([]leftover) []leftover { return nil }

func scanLeftovers(string) []leftover { return nil }

const canFindLeftovers = false
