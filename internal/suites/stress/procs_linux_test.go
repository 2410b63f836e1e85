//go:build linux

package stress

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// leftover is a process still running with its working directory under
// the test's dir: something a killed runner started and did not take down.
type leftover struct {
	pid     int
	cmdline string
}

// leftovers lists the processes whose cwd is under dir.
func leftovers(dir string) []leftover {
	ents, _ := os.ReadDir("/proc")
	var out []leftover
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, leftover{pid: pid, cmdline: strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")})
	}
	return out
}

// killLeftovers ends, by pid, the processes under dir that our killed
// runners left behind, so none outlives the test.
func killLeftovers(t *testing.T, dir string) {
	for _, l := range leftovers(dir) {
		t.Logf("killing leftover process %d: %s", l.pid, l.cmdline)
		_ = syscall.Kill(l.pid, syscall.SIGKILL)
	}
}
