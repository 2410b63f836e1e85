//go:build unix

package tfcmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// setProcAttrs puts terraform in a process group of its own, so a
// terminal's Ctrl-C reaches it only through the runner, which sends
// SIGINT itself and kills after the grace period. Terraform gets no
// parent-death signal: see HostWatch.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// interruptProcess asks terraform to stop: it then stops its operation,
// writes state and releases its state lock.
func interruptProcess(p *os.Process) error { return p.Signal(os.Interrupt) }

// watcherScript keeps the set of process groups the host names on its
// stdin, one line each: "+PGID" adds one, "-PGID" removes it, "done"
// ends the watcher. When its stdin ends without "done", it sends SIGINT
// to each group still in the set, as a terminal's Ctrl-C would (so the
// terraform a shim engine runs as its child gets it too; provider
// plugins ignore it). Its stdin is a pipe whose only writer is the
// host: when the host process dies, however it dies, the kernel closes
// that writer, read sees the end of the pipe, and each terraform gets
// exactly one interrupt. The set is a string " 1 2 3 "; read, case,
// kill and the pattern expansions are built into every POSIX sh.
const watcherScript = `trap '' INT HUP
g=' '
while read -r x; do
  case $x in
  done) exit 0 ;;
  +*) g="$g${x#+} " ;;
  -*) p=${x#-}; case $g in *" $p "*) g="${g%%" $p "*} ${g#*" $p "}" ;; esac ;;
  esac
done
for p in $g; do kill -s INT -- "-$p"; done`

// A HostWatch interrupts the terraform processes it watches, once each,
// as a first Ctrl-C would, if this host process dies while they run. One
// watcher (a small sh process) serves every process of a Run: starting
// one per terraform process cost about 1 ms of CPU each.
//
// Why not the kernel's parent-death signal (PR_SET_PDEATHSIG): it is
// tied to the thread that started the child, so a healthy Go host whose
// runtime ends that thread (a goroutine that locks its OS thread and
// exits) interrupts its own run; and when a multi-threaded host dies, the
// child is reparented to each of the host's threads in turn as they exit,
// getting the signal once per hop: terraform's second SIGINT means "exit
// immediately", without writing its state. A pipe's end is the process's,
// not a thread's, and it ends once.
//
// The zero value is ready; the watcher starts with the first Add. A
// watcher that died (killed by someone) is started again by the next Add
// or Remove, told every group still watched. A HostWatch is safe for
// concurrent use.
type HostWatch struct {
	mu     sync.Mutex
	cmd    *exec.Cmd // nil until the first Add, and after Close
	w      *os.File  // the watcher's stdin; only this process holds it
	live   map[int]bool
	closed bool
}

// Add watches the process group pgid (terraform's PID: it leads its
// group) until Remove. An error means the group is not watched; it
// runs as before.
func (h *HostWatch) Add(pgid int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("host watcher: closed")
	}
	if h.live == nil {
		h.live = map[int]bool{}
	}
	h.live[pgid] = true
	return h.sendOrRestart("+" + strconv.Itoa(pgid))
}

// Remove stops watching pgid: call it once the process has exited and
// been waited for, before its PID can be another's.
func (h *HostWatch) Remove(pgid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live, pgid)
	if h.cmd != nil {
		_ = h.sendOrRestart("-" + strconv.Itoa(pgid))
	}
}

// sendOrRestart sends line to the watcher, starting it first if there is
// none; if the watcher is gone (the write fails: nothing reads the pipe),
// it starts a new one and tells it every live group. h.mu is held.
func (h *HostWatch) sendOrRestart(line string) error {
	if h.cmd != nil {
		if err := h.send(line); err == nil {
			return nil
		}
		_ = h.w.Close()
		_ = h.cmd.Wait() // reap the watcher that died
		h.cmd, h.w = nil, nil
	}
	if err := h.start(); err != nil {
		return err
	}
	for pgid := range h.live {
		if err := h.send("+" + strconv.Itoa(pgid)); err != nil {
			return err
		}
	}
	return nil
}

// Close tells the watcher every watched process has exited and waits
// for it to end. Add fails after Close.
func (h *HostWatch) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.cmd == nil {
		return
	}
	_ = h.send("done")
	_ = h.w.Close()
	_ = h.cmd.Wait()
	h.cmd, h.w = nil, nil
}

// start starts the watcher; h.mu is held.
func (h *HostWatch) start() error {
	r, w, err := os.Pipe() // close-on-exec: terraform never holds the writer
	if err != nil {
		return fmt.Errorf("host watcher: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", watcherScript, "tfisolate-watch")
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{} // nothing of the unit's environment (secrets) in another process
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return fmt.Errorf("host watcher: %w", err)
	}
	h.cmd, h.w = cmd, w
	return nil
}

// send writes one line; a line is far below PIPE_BUF, so it is written
// whole. h.mu is held.
func (h *HostWatch) send(line string) error {
	if _, err := h.w.Write([]byte(line + "\n")); err != nil {
		return fmt.Errorf("host watcher: %w", err)
	}
	return nil
}
