package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tfisolate/tfisolate/internal/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// crashComponent creates terraform_data.first, then terraform_data.slow,
// whose provisioner waits on a gate.
const crashComponent = `
variable "gate" { type = string }
resource "terraform_data" "first" { input = "done" }
resource "terraform_data" "slow" {
  depends_on = [terraform_data.first]
  provisioner "local-exec" {
    command = "echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}
`

// crashSetup is a component, a gate and a unit of it whose state is at
// state, for a child host to apply.
type crashSetup struct {
	dir, root, cache, state string
	g                       gate
	spec                    workdir.Spec
}

func newCrashSetup(t *testing.T) crashSetup {
	t.Helper()
	dir := t.TempDir()
	s := crashSetup{dir: dir, root: filepath.Join(dir, "workdirs"), cache: filepath.Join(dir, "cache"), state: filepath.Join(dir, "crash.tfstate")}
	src := filepath.Join(dir, "src", "crash")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(crashComponent), 0o644))
	s.g = newGate(t, filepath.Join(dir, "gate"))
	t.Cleanup(func() { killMentioning(t, s.root) })
	s.spec = workdirSpec("plat-ue2-dev", "crash", src, files(t, map[string]any{"gate": s.g.dir}, s.state))
	return s
}

// engineProcess returns the PID of the one running process whose
// executable is bin and whose environment mentions root, and a pidfd on
// it.
func engineProcess(t *testing.T, bin, root string) (int, int) {
	t.Helper()
	want, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	var pids []int
	for _, p := range processesMentioning(t, root) {
		pid, err := strconv.Atoi(strings.Fields(p)[0])
		require.NoError(t, err)
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil && exe == want {
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, 1, "engine processes of %s", bin)
	fd, err := unix.PidfdOpen(pids[0], 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return pids[0], fd
}

// waitProcessEnd waits, at most bound, for the process of pidfd to end.
func waitProcessEnd(t *testing.T, fd int, bound time.Duration) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(bound.Milliseconds()))
		if err == syscall.EINTR {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, "the engine still runs after %s", bound)
		return
	}
}

// keptEngineOutputs returns the stdout files engines left under root.
func keptEngineOutputs(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == engineDir && strings.HasSuffix(p, ".out") {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// TestHostDeathInterruptsEngine SIGKILLs a host process (a child runner)
// while its apply is parked in a provisioner, under both engines. The
// engine gets SIGINT, not SIGKILL: it stops its provisioner, writes a
// state that records what it did (the first resource, the second
// tainted) and exits; its output, written to a file of its own, outlives
// the host and says it was interrupted.
func TestHostDeathInterruptsEngine(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		s := newCrashSetup(t)
		started := s.g.started(t)
		c := startChild(t, childConfig{TF: e.Path, Root: s.root, Cache: s.cache, Spec: s.spec}, nil)
		select {
		case <-started:
		case <-c.exited:
			t.Fatalf("the child ended before its apply: %v\n%s", c.err, c.stdout.String())
		}
		_, fd := engineProcess(t, e.Path, s.root)
		require.NoError(t, syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL))
		<-c.exited
		waitProcessEnd(t, fd, 2*time.Minute)

		outs := keptEngineOutputs(t, s.root)
		require.Len(t, outs, 1, "the crashed run's engine output is kept")
		out := readFile(t, outs[0])
		require.False(t, s.g.hasReader(), "the engine left its provisioner running: it was killed, not interrupted; its output:\n%s", out)
		require.Contains(t, out, "Interrupt received")

		b, err := os.ReadFile(s.state)
		require.NoError(t, err)
		var st struct {
			Lineage   string
			Resources []struct {
				Name      string
				Instances []struct{ Status string }
			}
		}
		require.NoError(t, json.Unmarshal(b, &st), "state:\n%s", b)
		require.NotEmpty(t, st.Lineage)
		got := map[string]string{}
		for _, r := range st.Resources {
			for _, in := range r.Instances {
				got[r.Name] = in.Status
			}
		}
		require.Equal(t, map[string]string{"first": "", "slow": "tainted"}, got, "state:\n%s\nengine output:\n%s", b, out)
	})
}
