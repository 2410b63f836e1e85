package tfcmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// environGOMAXPROCS is every GOMAXPROCS entry of a running process's
// environment, as the kernel gives it; an unreadable one says so.
func environGOMAXPROCS(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GOMAXPROCS=")); ok {
			out = append(out, string(v))
		}
	}
	return out
}

// TestCoreShareSizesEachProcess starts real processes through a Process
// with a share of 4 cores: three running at once get 4, 2 and 2 (the
// cores over those running at each start, rounded up), in whatever
// order they start; once they have ended, the next gets all 4 again;
// an environment that names GOMAXPROCS keeps its own value, alone.
func TestCoreShareSizesEachProcess(t *testing.T) {
	t.Parallel()
	share := NewCoreShare(4)
	// tail itself, not a shell that execs it: the environment is read as
	// the process starts, and a process in the middle of an exec may show
	// an empty one.
	tail, err := exec.LookPath("tail")
	require.NoError(t, err)
	newProc := func(env []string, started func(pid int)) *Process {
		dir := t.TempDir()
		return &Process{Path: tail, Dir: dir, Env: env, Grace: 10 * time.Second, Share: share,
			OutDir:  filepath.Join(dir, OutputDir),
			Stream:  func() (io.Writer, func()) { return io.Discard, func() {} },
			Note:    func(string) {},
			Started: func(pid int, _ string) { started(pid) }}
	}
	// Runs until interrupted: what it runs with is read while it runs.
	untilInterrupted := Raw("-f", "/dev/null")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	running, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var got []string
	startedAll := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		p := newProc([]string{"PATH=" + os.Getenv("PATH")}, func(pid int) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, environGOMAXPROCS(pid)...)
			if len(got) == 3 {
				close(startedAll)
			}
		})
		wg.Go(func() { _, _ = p.Run(running, untilInterrupted) })
	}
	select {
	case <-startedAll:
	case <-ctx.Done():
		t.Fatal("three processes did not start within a minute")
	}
	stop()
	wg.Wait()
	slices.Sort(got)
	require.Equal(t, []string{"2", "2", "4"}, got, "cores over the processes running at each start, rounded up")

	alone := func(env []string) []string {
		one, end := context.WithCancel(ctx)
		var seen []string
		p := newProc(env, func(pid int) {
			seen = environGOMAXPROCS(pid)
			end()
		})
		_, _ = p.Run(one, untilInterrupted)
		return seen
	}
	require.Equal(t, []string{"4"}, alone([]string{"PATH=" + os.Getenv("PATH")}), "the ended processes gave their places back")
	require.Equal(t, []string{"7"}, alone([]string{"PATH=" + os.Getenv("PATH"), "GOMAXPROCS=7"}), "the caller's GOMAXPROCS is kept")
	require.Zero(t, share.running.Load())
}

// TestCoreShareRoundsUp checks the share's arithmetic at the edges.
func TestCoreShareRoundsUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cores, running, want int }{
		{2, 1, 2}, {2, 2, 1}, {2, 8, 1}, {16, 3, 6}, {0, 1, 1}, {3, 2, 2},
	} {
		s := NewCoreShare(c.cores)
		var procs int
		var dones []func()
		for range c.running {
			p, done := s.take()
			procs, dones = p, append(dones, done)
		}
		require.Equal(t, c.want, procs, "%d cores, %d running", c.cores, c.running)
		for _, d := range dones {
			d()
		}
		require.Zero(t, s.running.Load())
	}
}
