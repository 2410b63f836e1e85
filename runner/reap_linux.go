package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A leftover is a process a run of the instance left running: found by
// what the SDK made it (a member of the process group of an engine the
// SDK started, recorded in the instance's journal), and held through a
// pidfd, so that a wait or a signal reaches that process and never one
// that later reused its PID.
type leftover struct {
	pid int
	exe string // the executable's base name; never the command line, which may hold secrets
	// engine: the recorded engine itself, or a process of its group
	// running a terraform or tofu binary that is not a plugin (the
	// terraform a shim engine started, left running when the shim ended),
	// still finishing what it was doing.
	engine bool
	f      *os.File // the pidfd, non-blocking, so the runtime's poller waits on it
}

func (l leftover) String() string { return strconv.Itoa(l.pid) + " " + l.exe }

func closeLeftovers(ls []leftover) {
	for _, l := range ls {
		_ = l.f.Close()
	}
}

// groupLeftovers returns the processes still running in the process
// group pgid of an engine started for the instance whose data dir is
// dataDir: the engine itself (its PID and its start time) and every
// member whose environment holds the instance's TF_DATA_DIR. An empty
// group costs one kill(2); only a group with members costs a read of
// /proc's stat files. Holding the instance lock, every such process is
// a leftover of this instance.
func groupLeftovers(pgid int, start uint64, dataDir string, engines []string) []leftover {
	if pgid <= 0 || syscall.Kill(-pgid, 0) != nil {
		return nil // ESRCH: no member left; EPERM: not this user's group
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	members := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := procStatFields(pid)
		if len(f) < 20 || string(f[0]) == "Z" {
			continue
		}
		if pg, _ := strconv.Atoi(string(f[2])); pg == pgid {
			members[pid] = true
		}
	}
	var out []leftover
	for pid := range members {
		leader := false
		l, ok := openLeftover(pid, func() bool {
			leader = pid == pgid && start != 0 && procStartTime(pid) == start
			return leader || hasEnv(pid, "TF_DATA_DIR="+dataDir)
		})
		if !ok {
			continue
		}
		l.engine = leader || (slices.Contains(engines, l.exe) && !hasEnv(pid, pluginCookie))
		out = append(out, l)
	}
	return out
}

// pluginCookie is in the environment of every provider (and provisioner)
// plugin terraform and tofu start.
const pluginCookie = "TF_PLUGIN_MAGIC_COOKIE="

// openLeftover opens a pidfd on pid, then checks, through ours, that it is
// the process meant: checked after the open, the pidfd is known to refer
// to that process.
func openLeftover(pid int, ours func() bool) (leftover, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return leftover{}, false // gone, or no pidfd (Linux before 5.3): nothing is touched
	}
	if err := unix.SetNonblock(fd, true); err != nil || !ours() {
		_ = unix.Close(fd)
		return leftover{}, false
	}
	return leftover{pid: pid, exe: exeName(pid), f: os.NewFile(uintptr(fd), "pidfd")}, true
}

// exeName is the base name of pid's executable.
func exeName(pid int) string {
	if p, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil {
		return filepath.Base(p)
	}
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return string(bytes.TrimSpace(b))
}

// hasEnv reports whether pid's environment holds the entry (KEY=VALUE),
// or an entry starting with it when it ends with "=".
func hasEnv(pid int, entry string) bool {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	env = append([]byte{0}, env...)
	if entry[len(entry)-1] == '=' {
		return bytes.Contains(env, []byte("\x00"+entry))
	}
	return bytes.Contains(env, []byte("\x00"+entry+"\x00"))
}

// waitGone waits until every process in ls has ended, until deadline or
// until ctx ends; it returns those still running. A pidfd becomes
// readable when its process ends, so nothing polls.
func waitGone(ctx context.Context, ls []leftover, deadline time.Time) []leftover {
	var running []leftover
	for _, l := range ls {
		if ctx.Err() != nil || !waitPidfd(ctx, l.f, deadline) {
			running = append(running, l)
		}
	}
	return running
}

func waitPidfd(ctx context.Context, f *os.File, deadline time.Time) bool {
	if err := f.SetReadDeadline(deadline); err != nil {
		return false
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	return rc.Read(func(fd uintptr) bool { return exited(int(fd)) }) == nil
}

// exited reports whether the process of pidfd fd has ended, without
// waiting.
func exited(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}

// killLeftovers SIGKILLs each process through its pidfd and waits, at
// most reapWait, until each is gone, so nothing of the instance runs once
// its lock is released. It returns the ones it killed.
func killLeftovers(ls []leftover) []leftover {
	var killed []leftover
	for _, l := range ls {
		rc, err := l.f.SyscallConn()
		if err != nil {
			continue
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0) }); err == nil && serr == nil {
			killed = append(killed, l)
		}
	}
	waitGone(context.Background(), killed, time.Now().Add(reapWait))
	return killed
}

// reapWait bounds the wait for killed processes to disappear; the kernel
// takes microseconds unless a process is stuck in uninterruptible I/O.
const reapWait = 10 * time.Second

// scanLeftovers finds, by reading every process's environment, the
// processes that carry the unit's exact TF_DATA_DIR: those that left the
// engine's process group (a provisioner's background job in a session of
// its own). It costs a read per process on the host, so it runs only
// where leftovers can be: after a unit whose terraform was killed or
// interrupted.
func scanLeftovers(dataDir string) []leftover {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []leftover
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if !hasEnv(pid, "TF_DATA_DIR="+dataDir) {
			continue
		}
		if l, ok := openLeftover(pid, func() bool { return hasEnv(pid, "TF_DATA_DIR="+dataDir) }); ok {
			out = append(out, l)
		}
	}
	return out
}

// canFindLeftovers: this platform can find and wait for leftovers.
const canFindLeftovers = true
