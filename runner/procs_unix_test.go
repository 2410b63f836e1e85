//go:build unix

package runner

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gate is a pair of fifos a local-exec provisioner uses to tell the test it
// has started ("started") and to wait until the test releases it
// ("release"). Opening a fifo blocks until the other end opens it, so
// neither side ever polls or sleeps.
type gate struct{ dir string }

func newGate(t *testing.T, dir string) gate {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range []string{"started", "release"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, n), 0o644))
	}
	return gate{dir: dir}
}

// command is the provisioner's shell command. exec makes cat the
// provisioner's own process, so stopping the provisioner stops cat.
func (g gate) command() string {
	return "echo started > " + g.dir + "/started; exec cat " + g.dir + "/release"
}

// started returns a channel closed once a provisioner has announced itself.
// The goroutine is joined when the test ends: a test that fails before
// the provisioner starts opens the fifo itself (O_RDWR never blocks), so
// the wait ends and nothing reports after the test is over.
func (g gate) started(t *testing.T) <-chan struct{} {
	ch := make(chan struct{})
	exited := make(chan struct{})
	p := filepath.Join(g.dir, "started")
	go func() {
		defer close(exited)
		f, err := os.Open(p) // blocks until a writer opens
		if err != nil {
			t.Errorf("open started fifo: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, f)
		f.Close()
		close(ch)
	}()
	t.Cleanup(func() {
		if w, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
			w.Close()
		}
		<-exited
	})
	return ch
}

// release lets the waiting provisioner finish.
func (g gate) release(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(g.dir, "release"), os.O_WRONLY, 0) // blocks until cat opens
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// hasReader reports whether a provisioner still waits on the release
// fifo: a process whose command line names it. It looks in /proc rather
// than opening the fifo, since opening and closing it would end the wait.
func (g gate) hasReader() bool {
	want := []byte(filepath.Join(g.dir, "release"))
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, want) {
			return true
		}
	}
	return false
}

// processesMentioning lists processes whose environment contains s: every
// process started for a unit inherits TF_DATA_DIR under the test's dir.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc to inspect processes")
	}
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if err != nil || !bytes.Contains(env, []byte(s)) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// gatedComponent creates terraform_data (replaced on every apply) whose
// provisioner waits on a gate when var.gate is set.
const gatedComponent = `
variable "gate" {
  type    = string
  default = ""
}
resource "terraform_data" "slow" {
  triggers_replace = timestamp()
  provisioner "local-exec" {
    command = var.gate == "" ? "true" : "echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}
`

func TestCancelDuringApply(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	state := filepath.Join(w.dir, "states", "cancel.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "gated/one", src, files(t, map[string]any{"gate": g.dir}, state))}

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	applying := make(chan struct{})
	rec := &recorder{}
	r := w.runner(t, WithInterruptGrace(20*time.Second), WithEvents(func(e Event) {
		rec.add(e)
		if e.Phase == PhaseApply {
			close(applying)
		}
	}))
	started := g.started(t)
	type out struct {
		rep *Report
		err error
	}
	done := make(chan out, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		rep, err := r.Run(ctx, Apply, u)
		done <- out{rep, err}
	}()
	t.Cleanup(func() { cancel(); <-exited })
	for _, ch := range []<-chan struct{}{applying, started} {
		select {
		case <-ch:
		case o := <-done:
			t.Fatalf("run ended before the provisioner started: %v", o.err)
		}
	}
	cancel()
	o := <-done
	require.ErrorIs(t, o.err, context.Canceled)
	res := o.rep.Results[0]
	require.Equal(t, Canceled, res.Status, "%v", res.Err)
	require.Equal(t, Canceled, rec.event(res.Unit, PhaseDone).Status)
	log, err := os.ReadFile(res.Log)
	require.NoError(t, err)
	require.Contains(t, string(log), "Interrupt received", "terraform got SIGINT")

	require.False(t, g.hasReader(), "the provisioner is still waiting")
	require.Empty(t, processesMentioning(t, w.dir), "processes left behind")
	_, err = os.Stat(filepath.Join(filepath.Dir(state), ".cancel.tfstate.lock.info"))
	require.ErrorIs(t, err, os.ErrNotExist, "state lock info left behind")

	// The state is unlocked: a plan (with locking) goes through.
	rep, err := r.Run(testCtx(t), Plan, u)
	require.NoError(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status)
	require.True(t, rep.Results[0].HasChanges)
}

// leakyComponent's provisioner starts a background process in a session of
// its own, out of reach of terraform's process-group kill, that keeps
// waiting on the gate after terraform is gone.
const leakyComponent = `
variable "gate" { type = string }
resource "terraform_data" "leaky" {
  provisioner "local-exec" {
    command = "setsid sh -c 'exec cat ${var.gate}/release' & echo started > ${var.gate}/started; wait"
  }
}
`

func TestCancelKillsLeftoverProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("leftover processes are found through /proc")
	}
	w := newWorld(t)
	src := w.component(t, "leaky", leakyComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "leaky", src, map[string][]byte{"terraform.tfvars.json": []byte(`{"gate":"` + g.dir + `"}`)})}
	ctx, cancel := context.WithCancel(testCtx(t))
	r := w.runner(t, WithInterruptGrace(20*time.Second))
	started := g.started(t)
	var rep *Report
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		rep, _ = r.Run(ctx, Apply, u)
	}()
	t.Cleanup(func() { cancel(); <-exited })
	select {
	case <-started:
	case <-exited:
		t.Fatal("run ended before the provisioner started")
	}
	cancel()
	<-exited
	require.Equal(t, Canceled, rep.Results[0].Status, "%v", rep.Results[0].Err)
	require.False(t, g.hasReader(), "the background process survived the run")
	require.Empty(t, processesMentioning(t, w.dir))
	log, err := os.ReadFile(rep.Results[0].Log)
	require.NoError(t, err)
	require.Contains(t, string(log), "killed leftover process")
}

// engineHolder is plain terraform (or tofu) applying gatedComponent outside
// any runner, parked in its provisioner while it holds the state lock.
type engineHolder struct {
	g      gate
	cmd    *exec.Cmd
	out    syncBuffer
	err    error         // the apply's end, once exited is closed
	exited chan struct{} // closed when the engine has ended
}

// startLockHolder starts enginePath's apply of the component in dir with
// env, in a process group of its own, and returns once its provisioner
// announced itself through g: the engine holds the state lock then. A
// holder that ends before that fails the test with its output; the test's
// end kills the group and waits for it.
func startLockHolder(t *testing.T, enginePath, dir string, env []string, g gate) *engineHolder {
	t.Helper()
	h := &engineHolder{g: g, exited: make(chan struct{})}
	h.cmd = exec.Command(enginePath, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "gate="+g.dir)
	h.cmd.Dir, h.cmd.Env = dir, env
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	started := g.started(t)
	require.NoError(t, h.cmd.Start())
	go func() { h.err = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.exited
	})
	select {
	case <-started:
	case <-h.exited:
		t.Fatalf("the holder ended before taking the lock: %v\n%s", h.err, h.out.String())
	}
	return h
}

// finish releases the holder's provisioner and requires its apply to
// succeed, its lock released.
func (h *engineHolder) finish(t *testing.T) {
	t.Helper()
	h.g.release(t)
	<-h.exited
	require.NoError(t, h.err, "%s", h.out.String())
}
