//go:build unix

package tfcmd

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcAttrs puts terraform in a process group of its own, so a
// terminal's Ctrl-C reaches it only through the runner, which sends
// SIGINT itself and kills after the grace period. Terraform gets no
// parent-death signal: see watchHost.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// interruptProcess asks terraform to stop: it then stops its operation,
// writes state and releases its state lock.
func interruptProcess(p *os.Process) error { return p.Signal(os.Interrupt) }

// watcherScript waits for a line on stdin; unless it is "done", it sends
// SIGINT to the process group $1: terraform's, as a terminal's Ctrl-C
// would (so the terraform a shim engine runs as its child gets it too;
// provider plugins ignore it). Its stdin is a pipe whose only writer is
// the host: when the host process dies, however it dies, the kernel
// closes that writer, read sees the end of the pipe, and terraform gets
// exactly one interrupt. kill and read are built into every sh.
const watcherScript = `trap '' INT HUP; read x; [ "$x" = done ] || kill -s INT -- "-$1"`

// watchHost starts a watcher that interrupts terraform (pid, the leader
// of its process group) once, as a first Ctrl-C would, if this host
// process dies before it calls the
// returned done; done tells the watcher terraform has exited and waits
// for it.
//
// Why not the kernel's parent-death signal (PR_SET_PDEATHSIG): it is
// tied to the thread that started the child, so a healthy Go host whose
// runtime ends that thread (a goroutine that locks its OS thread and
// exits) interrupts its own run; and when a multi-threaded host dies, the
// child is reparented to each of the host's threads in turn as they exit,
// getting the signal once per hop: terraform's second SIGINT means "exit
// immediately", without writing its state. A pipe's end is the process's,
// not a thread's, and it ends once.
func watchHost(pid int) (done func(), err error) {
	r, w, err := os.Pipe() // close-on-exec: terraform never holds the writer
	if err != nil {
		return nil, fmt.Errorf("host watcher: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", watcherScript, "tfisolate-watch", strconv.Itoa(pid))
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{} // nothing of the unit's environment (secrets) in another process
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("host watcher: %w", err)
	}
	return func() {
		_, _ = w.Write([]byte("done\n"))
		_ = w.Close()
		_ = cmd.Wait()
	}, nil
}
