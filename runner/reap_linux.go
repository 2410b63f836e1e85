package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reapLeftovers kills processes still carrying the unit's exact
// TF_DATA_DIR in their environment once its terraform has exited. Only
// processes started for this unit inherit it (the instance lock keeps
// every other run of the instance out), so what is found is a leftover: a
// provider plugin orphaned when terraform was killed after the interrupt
// grace, or a background process a provisioner left running. It returns a
// description of each process it killed.
func reapLeftovers(dataDir string) []string {
	want := []byte("TF_DATA_DIR=" + dataDir + "\x00")
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var killed []string
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, e.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
			pids = append(pids, pid)
		}
	}
	// SIGKILL is delivered asynchronously: wait until each process is gone
	// (or a zombie its parent has yet to reap), so that nothing of the
	// unit is still running once the instance lock is released.
	deadline := time.Now().Add(reapWait)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return killed
}

// reapWait bounds the wait for killed processes to disappear; the kernel
// takes microseconds unless a process is stuck in uninterruptible I/O.
const reapWait = 10 * time.Second

// alive reports whether pid still runs: it exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	st := b[i+2]
	return st != 'Z' && st != 'X'
}
