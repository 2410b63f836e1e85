package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// setDeathSignal makes the kernel send terraform SIGINT, as on a first
// Ctrl-C, when the thread that started it ends: terraform then stops at a
// safe point, writes its state and releases its state lock, instead of
// being killed in the middle of a state write (issue 27). Every engine is
// started by a starter (below), whose thread ends only with the process.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGINT }

// starter starts the engines of one Run from a single goroutine locked
// to its OS thread. Linux ties the parent-death signal to the thread that
// forked the child, not to the process: started from whatever thread the
// calling goroutine happened to run on, an engine would be interrupted
// whenever the Go runtime ended that thread (a goroutine that locks its
// thread and exits without unlocking ends it), in a host that is alive
// and well. The starter's goroutine keeps its thread locked until the Run
// is over, after every engine it started has been waited for (DESIGN
// invariant 10), and never unlocks it: the runtime then ends the thread,
// which nothing started from it outlives. So the death signal fires only
// when the process dies.
//
// A dedicated thread was chosen over a supervisor process: the SDK is a
// library and has no binary of its own to run as one, and re-executing
// the host's binary is not the host's to allow. One idle OS thread per
// Run is the cost.
type starter struct {
	reqs chan startReq
	done chan struct{}
}

type startReq struct {
	cmd *exec.Cmd
	err chan<- error
}

func newStarter() *starter {
	s := &starter{reqs: make(chan startReq), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		for r := range s.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return s
}

// start starts cmd from the starter's thread.
func (s *starter) start(cmd *exec.Cmd) error {
	if s == nil {
		return cmd.Start()
	}
	ch := make(chan error, 1)
	s.reqs <- startReq{cmd: cmd, err: ch}
	return <-ch
}

// close ends the starter's goroutine, and with it its thread; call it
// once every engine it started has been waited for.
func (s *starter) close() {
	if s != nil {
		close(s.reqs)
		<-s.done
	}
}

// procStartTime returns the start time of process pid, in clock ticks
// since boot (field 22 of /proc/PID/stat): with the PID, it names one
// process, never one that reused the PID later. 0 if pid is gone.
func procStartTime(pid int) uint64 {
	f := procStatFields(pid)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return n
}

// procStatFields returns the fields of /proc/PID/stat that follow the
// command name (the state is the first): the name is in parentheses and
// may itself hold spaces or parentheses.
func procStatFields(pid int) [][]byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return nil
	}
	return bytes.Fields(b[i+2:])
}
