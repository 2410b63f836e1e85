//go:build unix

package runner

import (
	"encoding/json"
	"os"
	"os/exec"
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
