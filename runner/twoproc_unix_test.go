//go:build unix

package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

type child struct {
	cmd    *exec.Cmd
	stdout syncBuffer
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit; read after exited
}

func startChild(t *testing.T, cfg childConfig, stderr *notifyWriter) *child {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	c := &child{exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"=apply", childConfigEnv+"="+string(b))
	c.cmd.Stdout = &c.stdout
	if stderr != nil {
		c.cmd.Stderr = stderr
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, c.cmd.Start())
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	})
	return c
}

func (c *child) result(t *testing.T) childResult {
	t.Helper()
	<-c.exited
	out := strings.TrimSpace(c.stdout.String())
	require.NoError(t, c.err, "child output:\n%s", out)
	var res childResult
	require.NoError(t, json.Unmarshal([]byte(out[strings.LastIndex(out, "\n")+1:]), &res), out)
	return res
}

// TestTwoProcessesSameInstance runs the same instance from two OS
// processes at once. The first parks inside its apply (a provisioner
// waiting on a fifo); the second must then be waiting for the instance lock
// (it says so), and it only reaches its own apply after the first is
// released. Both succeed.
func TestTwoProcessesSameInstance(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	cfg := childConfig{TF: w.tf, Root: filepath.Join(w.dir, "workdirs"), Cache: filepath.Join(w.dir, "cache"),
		Spec: workdirSpec("plat-ue2-dev", "gated/shared", src,
			files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "states", "shared.tfstate")))}

	started := g.started(t)
	first := startChild(t, cfg, nil)
	select {
	case <-started:
	case <-first.exited:
		t.Fatalf("first process ended before its apply: %v\n%s", first.err, first.stdout.String())
	}
	waiting := &notifyWriter{want: "waiting for instance lock", seen: make(chan struct{})}
	second := startChild(t, cfg, waiting)
	select {
	case <-waiting.seen:
	case <-second.exited:
		t.Fatalf("second process ended while the first held the instance: %v\n%s", second.err, second.stdout.String())
	}
	started = g.started(t)
	g.release(t)
	r1 := first.result(t)
	select {
	case <-started:
	case <-second.exited:
		t.Fatalf("second process never reached its apply: %v\n%s", second.err, second.stdout.String())
	}
	g.release(t)
	r2 := second.result(t)
	require.Equal(t, "succeeded", r1.Status, r1.Err)
	require.Equal(t, "succeeded", r2.Status, r2.Err)
	require.Positive(t, r2.LockWait)
	// The waiter's Result names the holder: the first process.
	require.NotNil(t, r2.Holder)
	require.Equal(t, first.cmd.Process.Pid, r2.Holder.PID)
	host, _ := os.Hostname()
	require.Equal(t, host, r2.Holder.Host)
	require.Nil(t, r1.Holder, "the first process never waited")
}
