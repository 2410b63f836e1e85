package reap

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

// Supported reports whether this platform can find leftovers and wait
// for them.
const Supported = true

// Find returns the processes still running in process group g.PGID: the
// engine itself (its PID and its start time) and every member whose
// environment holds the instance's TF_DATA_DIR. An empty group costs one
// kill(2); only a group with members costs a read of /proc's stat files.
// Holding the instance lock, every such process is a leftover of this
// instance.
func (g Group) Find() []Process {
	if g.PGID <= 0 || syscall.Kill(-g.PGID, 0) != nil {
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
		f := statFields(pid)
		if len(f) < 20 || string(f[0]) == "Z" {
			continue
		}
		if pg, _ := strconv.Atoi(string(f[2])); pg == g.PGID {
			members[pid] = true
		}
	}
	var out []Process
	for pid := range members {
		leader := false
		p, ok := open(pid, func() bool {
			leader = pid == g.PGID && g.Start != 0 && StartTime(pid) == g.Start
			return leader || hasEnv(pid, "TF_DATA_DIR="+g.DataDir)
		})
		if !ok {
			continue
		}
		p.Engine = leader || (slices.Contains(g.Engines, p.Exe) && !hasEnv(pid, pluginCookie))
		out = append(out, p)
	}
	return out
}

// pluginCookie is in the environment of every provider (and provisioner)
// plugin terraform and tofu start.
const pluginCookie = "TF_PLUGIN_MAGIC_COOKIE="

// open opens a pidfd on pid, then checks, through ours, that it is the
// process meant: checked after the open, the pidfd is known to refer to
// that process.
func open(pid int, ours func() bool) (Process, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return Process{}, false // gone, or no pidfd (Linux before 5.3): nothing is touched
	}
	if err := unix.SetNonblock(fd, true); err != nil || !ours() {
		_ = unix.Close(fd)
		return Process{}, false
	}
	return Process{PID: pid, Exe: exeName(pid), f: os.NewFile(uintptr(fd), "pidfd")}, true
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

// waitGone waits until every process in ps has ended, until deadline or
// until ctx ends; it returns those still running. A pidfd becomes
// readable when its process ends, so nothing polls.
func waitGone(ctx context.Context, ps []Process, deadline time.Time) []Process {
	var running []Process
	for _, p := range ps {
		if ctx.Err() != nil || !waitPidfd(ctx, p.f, deadline) {
			running = append(running, p)
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

// Kill SIGKILLs each process through its pidfd and waits, at most
// killWait, until each is gone, so nothing of the instance runs once its
// lock is released. It returns the ones it killed.
func Kill(ps []Process) []Process {
	var killed []Process
	for _, p := range ps {
		rc, err := p.f.SyscallConn()
		if err != nil {
			continue
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0) }); err == nil && serr == nil {
			killed = append(killed, p)
		}
	}
	waitGone(context.Background(), killed, time.Now().Add(killWait))
	return killed
}

// killWait bounds the wait for killed processes to disappear; the kernel
// takes microseconds unless a process is stuck in uninterruptible I/O.
const killWait = 10 * time.Second

// Scan finds, by reading every process's environment, the processes that
// carry the unit's exact TF_DATA_DIR, dataDir: those that left the
// engine's process group (a provisioner's background job in a session of
// its own). It costs a read per process on the host, so callers run it
// only where leftovers can be: after a unit whose terraform was killed or
// interrupted, or at a Stop's kill.
func Scan(dataDir string) []Process {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if !hasEnv(pid, "TF_DATA_DIR="+dataDir) {
			continue
		}
		if p, ok := open(pid, func() bool { return hasEnv(pid, "TF_DATA_DIR="+dataDir) }); ok {
			out = append(out, p)
		}
	}
	return out
}
