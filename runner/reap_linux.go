package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			killed = append(killed, e.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return killed
}

// setDeathSignal makes the kernel kill terraform if the runner's process
// dies, so a crashed host leaves no terraform running.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
