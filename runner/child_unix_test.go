//go:build unix

package runner

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// startChild starts the test binary as a child runner (see applyChild)
// applying cfg, in a process group of its own, with extra environment;
// its stderr goes to stderr, or nowhere if nil. When the test ends, the
// group is killed, and with it whatever the child started.
func startChild(t *testing.T, cfg childConfig, stderr *notifyWriter, env ...string) *childproc.Proc {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	opts := []childproc.Option{
		childproc.WithEnv(append([]string{childConfigEnv + "=" + string(b)}, env...)...),
		childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}),
		childproc.WithTimeout(childTimeout),
		childproc.WithStderr(nil),
	}
	if stderr != nil {
		opts = append(opts, childproc.WithStderr(stderr))
	}
	c := childproc.Start(t, "apply", opts...)
	t.Cleanup(func() {
		_ = syscall.Kill(-c.PID(), syscall.SIGKILL)
		<-c.Done()
		// Its engine, in a process group of its own, is only interrupted
		// by the host's death: end it with whatever it started.
		if cfg.Root != "" {
			killMentioning(t, cfg.Root)
		}
	})
	return c
}

// crashMachine ends the child host c the way a machine that loses power
// ends it: the host, its terraform and everything terraform started die
// at once (the host is frozen first, so it never sees its terraform die
// and terraform is never interrupted). root is the child's workdir root,
// which every process started for its units has in its environment.
func crashMachine(t *testing.T, c *childproc.Proc, root string) {
	t.Helper()
	host := c.PID()
	require.NoError(t, syscall.Kill(-host, syscall.SIGSTOP))
	// Everything else first: the host's death would interrupt terraform.
	for _, p := range processesMentioning(t, root) {
		if n, err := strconv.Atoi(strings.Fields(p)[0]); err == nil && n != host {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
	require.NoError(t, syscall.Kill(-host, syscall.SIGKILL))
	<-c.Done()
}

// killMentioning SIGKILLs every process whose environment mentions s.
func killMentioning(t *testing.T, s string) {
	for _, p := range processesMentioning(t, s) {
		if n, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// resultOf waits for the child c to exit, requires that it succeeded, and
// returns the childResult on its last stdout line.
func resultOf(t *testing.T, c *childproc.Proc) childResult {
	t.Helper()
	err := c.Wait()
	out := strings.TrimSpace(c.Output())
	require.NoError(t, err, "child output:\n%s", out)
	var res childResult
	require.NoError(t, json.Unmarshal([]byte(out[strings.LastIndex(out, "\n")+1:]), &res), out)
	return res
}
