package tfcmd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// interruptible is a stand-in for terraform: it says "ready" once its
// trap is set, and on SIGINT appends "int" to the file $1 and exits.
// (The background sleep gets no SIGINT of its own: a non-interactive
// shell's background jobs ignore it, so the trap ends it.)
const interruptible = `trap 'echo int >> "$1"; kill $!; exit 0' INT; sleep 600 & echo ready; wait`

// startInterruptible starts interruptible in a process group of its own,
// as a terraform Process is, and waits until its trap is set.
func startInterruptible(log string) (*exec.Cmd, error) {
	cmd := exec.Command("/bin/sh", "-c", interruptible, "interruptible", log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return nil, fmt.Errorf("interruptible said %q: %v", line, err)
	}
	return cmd, nil
}

const hostWatchRole = "hostwatch"

func init() { children[hostWatchRole] = hostWatchChild }

// hostWatchChild watches three interruptibles with one HostWatch, whose
// watcher it kills after the first (as someone else might), and stops
// watching the third, then prints their PIDs and the watcher's and waits
// to be killed.
func hostWatchChild() error {
	dir := os.Getenv("HOSTWATCH_DIR")
	h := &HostWatch{}
	var pids []string
	for i := range 3 {
		cmd, err := startInterruptible(filepath.Join(dir, fmt.Sprintf("p%d.log", i)))
		if err != nil {
			return err
		}
		if err := h.Add(cmd.Process.Pid); err != nil {
			return err
		}
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
		if i == 0 {
			first := h.cmd.Process.Pid
			if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
				return err
			}
			var info unix.Siginfo // until it is dead; HostWatch reaps it
			if err := unix.Waitid(unix.P_PID, first, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
				return fmt.Errorf("wait for the killed watcher: %w", err)
			}
		}
	}
	h.Remove(mustAtoi(pids[2]))
	fmt.Println(strings.Join(pids, " "), h.cmd.Process.Pid)
	select {} // until the test kills this host
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// pidfd opens a pidfd on pid, closed when the test ends.
func pidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// ended reports whether the process of fd has ended, waiting at most
// bound for it.
func ended(t *testing.T, fd int, bound time.Duration) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(bound.Milliseconds()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		require.NoError(t, err)
		return n == 1
	}
}

// TestHostWatchInterruptsEachWatchedGroupOnce SIGKILLs a host whose one
// HostWatch watches two running processes and watched a third until
// Remove (its first watcher killed after the first Add: the next Add
// starts another and tells it the first process too): each of the two
// gets one SIGINT (its trap writes one line and exits), and the third,
// removed, gets nothing and runs on after the watcher has ended.
func TestHostWatchInterruptsEachWatchedGroupOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := childproc.Start(t, hostWatchRole, childproc.WithEnv("HOSTWATCH_DIR="+dir), childproc.WithTimeout(time.Minute))
	f := strings.Fields(c.Next(t))
	require.Len(t, f, 4, "the child's PIDs")
	var fds []int
	for _, s := range f {
		fds = append(fds, pidfd(t, mustAtoi(s)))
	}
	removed := mustAtoi(f[2])
	t.Cleanup(func() { _ = syscall.Kill(-removed, syscall.SIGKILL) })

	require.Error(t, c.Kill(), "the host had ended by itself:\n%s", c.Output())
	for i := range 2 {
		require.True(t, ended(t, fds[i], time.Minute), "watched process %d still runs a minute after its host died", i)
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("p%d.log", i)))
		require.NoError(t, err, "watched process %d ended without its SIGINT trap", i)
		require.Equal(t, "int\n", string(b), "watched process %d", i)
	}
	require.True(t, ended(t, fds[3], time.Minute), "the watcher still runs a minute after its host died")
	require.False(t, ended(t, fds[2], 0), "the removed process ended: the watcher signalled it")
	require.NoFileExists(t, filepath.Join(dir, "p2.log"), "the removed process got a SIGINT")
}

// TestHostWatchCloseSignalsNothing closes a HostWatch whose process still
// runs (Close is for when all have exited, but it must never signal):
// the watcher ends, the process got no SIGINT, and a later Add fails.
func TestHostWatchCloseSignalsNothing(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "p.log")
	cmd, err := startInterruptible(log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	h := &HostWatch{}
	require.NoError(t, h.Add(cmd.Process.Pid))
	watcher := pidfd(t, h.cmd.Process.Pid)
	h.Close()
	require.True(t, ended(t, watcher, 0), "Close returned before the watcher ended")
	require.NoFileExists(t, log, "Close signalled a watched process")
	require.Error(t, h.Add(cmd.Process.Pid))
}

// TestAwaitExitLeavesTheStatus waits for a process that exits 3 through
// the poller, at once and after more than one of the poller's one-second
// renewals: the exit status is still there for Wait.
func TestAwaitExitLeavesTheStatus(t *testing.T) {
	t.Parallel()
	for _, script := range []string{"exit 3", "sleep 1.5; exit 3"} {
		cmd := exec.Command("/bin/sh", "-c", script)
		require.NoError(t, cmd.Start())
		fd := pidfd(t, cmd.Process.Pid)
		awaitExit(cmd.Process)
		require.True(t, ended(t, fd, 0), "awaitExit returned before the process exited (%s)", script)
		var exitErr *exec.ExitError
		require.ErrorAs(t, cmd.Wait(), &exitErr)
		require.Equal(t, 3, exitErr.ExitCode(), script)
	}
}
