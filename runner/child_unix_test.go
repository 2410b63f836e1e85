//go:build unix

package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
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
		// Its engine, in a process group of its own, is only interrupted
		// by the host's death: end it with whatever it started.
		if cfg.Root != "" {
			killMentioning(t, cfg.Root)
		}
	})
	return c
}

// crashMachine ends the child host the way a machine that loses power
// ends it: the host, its terraform and everything terraform started die
// at once (the host is frozen first, so it never sees its terraform die
// and terraform is never interrupted). root is the child's workdir root,
// which every process started for its units has in its environment.
func (c *child) crashMachine(t *testing.T, root string) {
	t.Helper()
	host := c.cmd.Process.Pid
	require.NoError(t, syscall.Kill(-host, syscall.SIGSTOP))
	// Everything else first: the host's death would interrupt terraform.
	for _, p := range processesMentioning(t, root) {
		if n, err := strconv.Atoi(strings.Fields(p)[0]); err == nil && n != host {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
	require.NoError(t, syscall.Kill(-host, syscall.SIGKILL))
	<-c.exited
}

// killMentioning SIGKILLs every process whose environment mentions s.
func killMentioning(t *testing.T, s string) {
	for _, p := range processesMentioning(t, s) {
		if n, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
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
