package reap

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a cat process the test started: it runs until its stdin is
// closed, or it is killed.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{} // closed once the process is reaped; err is its end
	err    error
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// wait waits for the process to exit and returns how it ended.
func (p *proc) wait() error {
	<-p.exited
	return p.err
}

// end closes the process's stdin and waits for it to exit.
func (p *proc) end(t *testing.T) {
	t.Helper()
	require.NoError(t, p.stdin.Close())
	require.NoError(t, p.wait())
}

// alive reports whether the process still runs (it has not been
// reaped: the test reaps it as soon as it exits).
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// startCat starts bin (a cat) with env added to the environment and
// attr as its process attributes, and kills it at the test's end.
func startCat(t *testing.T, bin string, attr *syscall.SysProcAttr, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = attr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		<-p.exited
	})
	return p
}

func catPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat on PATH")
	}
	return p
}

// engineGroup starts an engine (a group leader) and a member of its
// group that carries the instance's TF_DATA_DIR, as a provisioner's job
// would.
func engineGroup(t *testing.T) (engine, member *proc, g Group) {
	t.Helper()
	cat := catPath(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	engine = startCat(t, cat, &syscall.SysProcAttr{Setpgid: true}, "TF_DATA_DIR="+dataDir)
	member = startCat(t, cat, &syscall.SysProcAttr{Setpgid: true, Pgid: engine.pid()}, "TF_DATA_DIR="+dataDir)
	start := StartTime(engine.pid())
	require.NotZero(t, start)
	return engine, member, Group{PGID: engine.pid(), Start: start, DataDir: dataDir, Engines: []string{"terraform"}}
}

func pids(ps []Process) map[int]bool {
	m := map[int]bool{}
	for _, p := range ps {
		m[p.PID] = p.Engine
	}
	return m
}

// TestStartTime: a running process has a start time, also when its
// command name holds spaces and parentheses; a process that is gone has
// none.
func TestStartTime(t *testing.T) {
	require.NotZero(t, StartTime(os.Getpid()))
	odd := filepath.Join(t.TempDir(), "c) (a t")
	b, err := os.ReadFile(catPath(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(odd, b, 0o755))
	p := startCat(t, odd, nil)
	require.Equal(t, "c) (a t", exeName(p.pid()))
	require.NotZero(t, StartTime(p.pid()))
	require.Equal(t, StartTime(p.pid()), StartTime(p.pid()))
	pid := p.pid()
	p.end(t)
	require.Zero(t, StartTime(pid))
}

// TestGroupFind: the group's leader is its engine only when its start
// time matches the record (a process that reused the PID is not); a
// member is found by the instance's TF_DATA_DIR, and is an engine only
// when it runs an engine's executable and is no plugin; a member without
// the TF_DATA_DIR, or of another instance, is not found.
func TestGroupFind(t *testing.T) {
	engine, member, g := engineGroup(t)
	stranger := startCat(t, catPath(t), &syscall.SysProcAttr{Setpgid: true, Pgid: engine.pid()}, "TF_DATA_DIR="+g.DataDir+"-other")
	ps := g.Find()
	defer Close(ps)
	require.Equal(t, map[int]bool{engine.pid(): true, member.pid(): false}, pids(ps))
	require.NotContains(t, pids(ps), stranger.pid())
	require.Equal(t, "cat", ps[0].Exe)

	reused := g
	reused.Start++
	ps2 := reused.Find()
	defer Close(ps2)
	require.Equal(t, map[int]bool{engine.pid(): false, member.pid(): false}, pids(ps2), "a leader with another start time is no engine")

	asEngine := g
	asEngine.Engines = []string{"cat"}
	plugin := startCat(t, catPath(t), &syscall.SysProcAttr{Setpgid: true, Pgid: engine.pid()}, "TF_DATA_DIR="+g.DataDir, pluginCookie+"x")
	ps3 := asEngine.Find()
	defer Close(ps3)
	require.Equal(t, map[int]bool{engine.pid(): true, member.pid(): true, plugin.pid(): false}, pids(ps3))

	require.Empty(t, Group{PGID: 0, DataDir: g.DataDir}.Find())
}

// TestSettleWaitsThenKills: Settle waits for the engine, however long it
// takes within the bound, never killing it, then kills what it left in
// its group.
func TestSettleWaitsThenKills(t *testing.T) {
	engine, member, g := engineGroup(t)
	var waited []int
	s, err := Settle(context.Background(), g, time.Minute, func(p Process) {
		waited = append(waited, p.PID)
		engine.end(t) // the engine finishes by itself: exit status 0
	})
	require.NoError(t, err)
	require.Equal(t, []int{engine.pid()}, waited)
	require.Nil(t, s.Running)
	require.False(t, s.Seen.IsZero())
	require.Len(t, s.Killed, 1)
	require.Equal(t, member.pid(), s.Killed[0].PID)
	require.Equal(t, "cat", s.Killed[0].Exe)
	require.Error(t, member.wait(), "the leftover was not killed")
}

// TestSettleNeverKillsAnEngine: an engine still running when the wait is
// over, or when ctx ends, is returned, and nothing in its group is
// killed.
func TestSettleNeverKillsAnEngine(t *testing.T) {
	engine, member, g := engineGroup(t)
	s, err := Settle(context.Background(), g, 0, func(Process) {})
	require.NoError(t, err)
	require.NotNil(t, s.Running)
	require.Equal(t, engine.pid(), s.Running.PID)
	require.Empty(t, s.Killed)
	require.False(t, s.Seen.IsZero())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err = Settle(ctx, g, time.Minute, func(Process) {})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, s.Killed)
	require.True(t, engine.alive())
	require.True(t, member.alive())
}

// TestSettleNothingLeft: a group with no member left costs no wait and
// kills nothing.
func TestSettleNothingLeft(t *testing.T) {
	engine, member, g := engineGroup(t)
	member.end(t)
	engine.end(t)
	s, err := Settle(context.Background(), g, time.Minute, func(Process) { t.Error("waited for a process that is gone") })
	require.NoError(t, err)
	require.Equal(t, Settled{}, s)
}

// TestScanFindsTheDataDirExactly: a process that left the engine's group
// (a session of its own) is found by its exact TF_DATA_DIR, never by a
// longer one, and Kill ends it.
func TestScanFindsTheDataDirExactly(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startCat(t, catPath(t), &syscall.SysProcAttr{Setsid: true}, "TF_DATA_DIR="+dataDir)
	other := startCat(t, catPath(t), &syscall.SysProcAttr{Setsid: true}, "TF_DATA_DIR="+dataDir+"2")
	ps := Scan(dataDir)
	defer Close(ps)
	require.Equal(t, map[int]bool{p.pid(): false}, pids(ps))
	killed := Kill(ps)
	require.Len(t, killed, 1)
	require.Error(t, p.wait(), "the process was not killed")
	require.True(t, other.alive())
	require.Equal(t, "123 cat", Process{PID: 123, Exe: "cat"}.String())
}
