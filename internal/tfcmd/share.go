package tfcmd

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// A CoreShare sizes the Go runtime of each terraform process a Run
// starts to its share of the host's cores: GOMAXPROCS is the cores over
// the processes of the share running at its start (this one included),
// rounded up, at least 1. Terraform, OpenTofu and their providers are Go
// programs, and each one's runtime otherwise keeps one scheduler per
// core, spinning on every core whenever a goroutine wakes: eight of them
// on two cores spend a fifth of their CPU on it (measured: 120 warm
// applies of a minimal component, 8 at a time on 2 cores, 78-98 ms of
// CPU an apply against 59-63 ms with GOMAXPROCS=1). A process started
// alone still gets every core. Only the scheduling changes: what
// terraform does, and in what order it calls providers (its own
// -parallelism), does not.
//
// A process whose environment already names GOMAXPROCS keeps it: a
// caller that sets it, for the host or for a unit, decides.
type CoreShare struct {
	cores   int
	running atomic.Int64
}

// NewCoreShare returns a share of cores (the host's runtime.GOMAXPROCS,
// which follows the CPUs it may use and a cgroup's CPU limit); fewer
// than 1 is 1.
func NewCoreShare(cores int) *CoreShare {
	return &CoreShare{cores: max(cores, 1)}
}

// take counts one more running process and returns the GOMAXPROCS it
// gets; done gives its place back when it has ended.
func (s *CoreShare) take() (procs int, done func()) {
	n := int(s.running.Add(1))
	return max(1, (s.cores+n-1)/n), func() { s.running.Add(-1) }
}

// shareEnv is env with GOMAXPROCS set to s's share for one process, and
// the function to call once it has ended; env itself when s is nil or
// env already names GOMAXPROCS.
func (s *CoreShare) shareEnv(env []string) ([]string, func()) {
	if s == nil {
		return env, func() {}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env, func() {}
		}
	}
	procs, done := s.take()
	out := make([]string, len(env), len(env)+1)
	copy(out, env)
	return append(out, "GOMAXPROCS="+strconv.Itoa(procs)), done
}
