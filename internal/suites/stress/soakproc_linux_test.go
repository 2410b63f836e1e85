//go:build linux

package stress

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pinfo is one process as /proc shows it. A pid and its start time name
// a process for good: a pid alone may be reused.
type pinfo struct {
	pid, ppid int
	start     uint64 // clock ticks since boot
	exe, cwd  string // "" when unreadable (another user's process, a zombie)
	cmdline   string
}

// scanProcs reads every process of the machine from /proc.
func scanProcs() map[int]pinfo {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]pinfo, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, ok := procStat(pid)
		if !ok {
			continue
		}
		p := pinfo{pid: pid, ppid: ppid, start: start}
		p.exe, _ = os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		p.cwd, _ = os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		p.cmdline = strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")
		out[pid] = p
	}
	return out
}

// procStat returns the parent and the start time of pid.
func procStat(pid int) (ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields that matter come after its last ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	return ppid, start, err1 == nil && err2 == nil
}

// alive reports whether the process pid that started at start still runs
// (a zombie counts as gone: it runs nothing).
func alive(pid int, start uint64) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 >= len(b) || b[i+2] == 'Z' {
		return false
	}
	_, st, ok := procStat(pid)
	return ok && st == start
}

// descendants returns the pids under root in procs (root excluded).
func descendants(procs map[int]pinfo, root int) []int {
	kids := map[int][]int{}
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// pidfd is an open handle on one process, safe against pid reuse.
type pidfd struct {
	fd    int
	pid   int
	start uint64
}

// openPidfd opens a handle on the process pid started at start, or
// returns false when that process is gone.
func openPidfd(pid int, start uint64) (pidfd, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return pidfd{}, false
	}
	// Opened after the check could be a new process with the same pid:
	// check again with the handle held.
	if !alive(pid, start) {
		_ = unix.Close(fd)
		return pidfd{}, false
	}
	return pidfd{fd: fd, pid: pid, start: start}, true
}

func (p pidfd) close() { _ = unix.Close(p.fd) }

func (p pidfd) signal(sig syscall.Signal) error { return unix.PidfdSendSignal(p.fd, sig, nil, 0) }

// wait waits, at most bound, for the process to end, and reports whether
// it did.
func (p pidfd) wait(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		n, err := unix.Poll(fds, int(left.Milliseconds()))
		if err == syscall.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// environMentions reports whether the environment of pid mentions s.
func environMentions(pid int, s string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && bytes.Contains(b, []byte(s))
}

// stateWrites reports, by inotify, each modification of a file named
// terraform.tfstate in the dirs added to it: the moments an engine writes
// an instance's state (the local backend rewrites it in place).
type stateWrites struct {
	f    *os.File
	fd   int
	wds  map[int32]int // watch -> instance; read and written by add only
	ch   chan int      // instance numbers, dropped when full
	done chan struct{}
}

func newStateWrites() (*stateWrites, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	w := &stateWrites{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, wds: map[int32]int{}, ch: make(chan int, 64), done: make(chan struct{})}
	go w.read()
	return w, nil
}

// add watches dir as instance n's; adding a watched dir again is a no-op.
func (w *stateWrites) add(dir string, n int) {
	wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_MODIFY)
	if err == nil {
		w.wds[int32(wd)] = n
	}
}

func (w *stateWrites) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := cString(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if name != "terraform.tfstate" {
				continue
			}
			// The watch descriptor travels, not the instance: wds
			// belongs to the soak's goroutine, which maps it.
			select {
			case w.ch <- int(ev.Wd):
			default:
			}
		}
	}
}

// instance maps a watch descriptor from ch to its instance.
func (w *stateWrites) instance(wd int) int { return w.wds[int32(wd)] }

func (w *stateWrites) close() {
	w.f.Close()
	<-w.done
}
