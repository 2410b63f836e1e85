package reap

import (
	"context"
	"os"
	"strconv"
	"time"
)

// A Process is a process a run of an instance left running: found by
// what the SDK made it (a member of the process group of an engine the
// SDK started, or a carrier of the instance's TF_DATA_DIR), and held
// through a pidfd, so that a wait or a signal reaches that process and
// never one that later reused its PID.
type Process struct {
	PID int
	Exe string // the executable's base name; never the command line, which may hold secrets
	// Engine: the recorded engine itself, or a process of its group
	// running a terraform or tofu binary that is not a plugin (the
	// terraform a shim engine started, left running when the shim ended),
	// still finishing what it was doing.
	Engine bool
	f      *os.File // the pidfd, non-blocking, so the runtime's poller waits on it
}

// String is "PID EXE", as the runner logs and reports a process.
func (p Process) String() string { return strconv.Itoa(p.PID) + " " + p.Exe }

// Close releases the pidfds of ps.
func Close(ps []Process) {
	for _, p := range ps {
		if p.f != nil {
			_ = p.f.Close()
		}
	}
}

// A Group is the process group of an engine started for an instance:
// what Find looks in, and what Settle waits for.
type Group struct {
	// PGID is the engine's PID, which is its process group (the engine
	// is started as a group leader).
	PGID int
	// Start is the engine's start time (StartTime); 0 when unknown, and
	// then the group's leader is never taken for the engine by its PID.
	Start uint64
	// DataDir is the instance's TF_DATA_DIR, in the environment of every
	// process the engine started.
	DataDir string
	// Engines are the executable names an engine has (terraform, tofu,
	// the configured binary's): a group member running one that is not a
	// plugin is an engine too.
	Engines []string
}

// Settled is what Settle did.
type Settled struct {
	// Waited is how long Settle waited for engines to end.
	Waited time.Duration
	// Seen is when the last scan that found an engine still running
	// began (zero when none did): the engine ran at least until then,
	// and only until a moment no later than that can it be proven (the
	// wait's end says it is gone, not when it went).
	Seen time.Time
	// Running is an engine still running when the wait was over; nothing
	// was killed then.
	Running *Process
	// Killed are the processes the engines left, killed once they were
	// gone.
	Killed []Process
}

// Settle waits for the engines of group g (the engine, and any terraform
// it started) to end, at most wait and until ctx ends, calling waiting
// once for each engine it waits for, then kills what they left in the
// group. An engine is never killed: it may be writing the state, so one
// still running when the wait is over is returned as Running, with
// nothing killed, or, when ctx ended, ctx's error. The processes
// returned are closed (Close): only their PID and Exe are left to read.
func Settle(ctx context.Context, g Group, wait time.Duration, waiting func(Process)) (s Settled, err error) {
	scanned := time.Now()
	ps := g.Find()
	defer func() { Close(ps) }()
	deadline := time.Now().Add(wait)
	announced := map[int]bool{}
	for {
		var engines []Process
		for _, p := range ps {
			if p.Engine {
				engines = append(engines, p)
			}
		}
		if len(engines) == 0 {
			break
		}
		s.Seen = scanned
		for _, p := range engines {
			if !announced[p.PID] {
				announced[p.PID] = true
				waiting(p)
			}
		}
		t := time.Now()
		running := waitGone(ctx, engines, deadline)
		s.Waited += time.Since(t)
		if len(running) > 0 {
			if err := ctx.Err(); err != nil {
				return s, err
			}
			s.Running = &running[0]
			return s, nil
		}
		// Whatever the engines left (or a terraform a shim started, once
		// the shim is gone).
		Close(ps)
		scanned = time.Now()
		ps = g.Find()
	}
	s.Killed = Kill(ps)
	return s, nil
}
