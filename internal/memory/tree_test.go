//go:build linux

package memory

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// allocEnv holds the MiB an "alloc" child allocates and touches before
// it says "ready" and waits for its stdin to close.
const allocEnv = "MEMORY_TEST_ALLOC_MIB"

func TestMain(m *testing.M) {
	childproc.Main(m, func(role string) error {
		if role != "alloc" {
			return fmt.Errorf("unknown role %q", role)
		}
		mib, err := strconv.Atoi(os.Getenv(allocEnv))
		if err != nil {
			return err
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		b[0] = 2 // keep b alive until here
		return nil
	})
}

// startAllocator starts /bin/sh, which starts this test binary as an
// "alloc" child (childproc's role variable) of mib MiB: a tree two levels
// deep, which childproc.Start (the binary itself, no shell) cannot make. It returns the shell's
// PID and a function that ends both and waits.
func startAllocator(t *testing.T, mib int) (pid int, stop func()) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("/bin/sh", "-c", `"$0"; exit 0`, self)
	cmd.Env = append(os.Environ(), childproc.Env+"=alloc", allocEnv+"="+strconv.Itoa(mib))
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = in.Close()
		require.NoError(t, cmd.Wait())
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

func TestTreeFindsGrandchildrenAndTheirMemory(t *testing.T) {
	pid, _ := startAllocator(t, 64)
	procs := Tree(pid)
	require.Len(t, procs, 2, "the shell and the allocator it started: %v", procs)
	require.Equal(t, pid, procs[0].PID, "the root comes first")
	require.GreaterOrEqual(t, Sum(procs), int64(64<<20), "the allocator's touched pages are resident")

	// From this test process, the tree holds it and its descendants.
	all := Tree(os.Getpid())
	require.Equal(t, os.Getpid(), all[0].PID)
	found := 0
	for _, p := range all {
		if p.PID == pid || p.PID == procs[1].PID {
			found++
		}
	}
	require.Equal(t, 2, found)
}

func TestTreeOfAGoneProcessIsEmpty(t *testing.T) {
	pid, stop := startAllocator(t, 1)
	stop()
	require.Empty(t, Tree(pid))
	require.Zero(t, StartTime(pid))
}

func TestWatchKeepsThePeakAndDropsEndedRoots(t *testing.T) {
	w := NewWatch(10*time.Millisecond, 0)
	defer w.Stop()
	pid, stop := startAllocator(t, 48)
	w.Add(pid)
	require.GreaterOrEqual(t, w.Current(), int64(48<<20))
	stop()
	w.Sample()
	require.Zero(t, w.Current(), "an ended root is not counted")
	require.GreaterOrEqual(t, w.Peak(), int64(48<<20), "the peak stays")
	w.mu.Lock()
	require.Empty(t, w.roots)
	w.mu.Unlock()
	w.Stop()
	w.Stop() // twice is fine
}

func TestWatchIgnoresAGoneProcess(t *testing.T) {
	pid, stop := startAllocator(t, 1)
	stop()
	w := NewWatch(time.Hour, 0)
	defer w.Stop()
	w.Add(pid)
	require.Zero(t, w.Peak())
	w.mu.Lock()
	require.Empty(t, w.roots)
	w.mu.Unlock()
}

// TestWatchMeasuresCores: a shell spinning in a loop is measured as using
// CPU between two samples, and the allocator, waiting on its stdin, as
// using next to none; the callback gets each measured figure.
func TestWatchMeasuresCores(t *testing.T) {
	spin := exec.Command("/bin/sh", "-c", "while :; do :; done")
	require.NoError(t, spin.Start())
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	idle, _ := startAllocator(t, 1)

	busyW, idleW := NewWatch(time.Hour, 0), NewWatch(time.Hour, 0) // sampled by hand
	defer busyW.Stop()
	defer idleW.Stop()
	var got []float64
	busyW.OnSample(func(c float64, whole, _ bool) {
		require.True(t, whole, "Sample walks the trees")
		got = append(got, c)
	})
	busyW.Add(spin.Process.Pid)
	idleW.Add(idle)
	idleW.mu.Lock()
	added := idleW.marks[len(idleW.marks)-1].at // the later of the two baselines
	idleW.mu.Unlock()
	_, ok := busyW.Cores()
	require.False(t, ok, "one sample measures nothing")

	// Wait (bounded) until the spinner has used CPU the kernel accounts,
	// and the span a measurement needs has passed (CPU times come in
	// whole ticks, so five of them can show up in less than 50 ms).
	before := Tree(spin.Process.Pid)[0].CPU
	deadline := time.Now().Add(time.Minute)
	for Tree(spin.Process.Pid)[0].CPU < before+5*clockTick || time.Since(added) < minSpan {
		require.True(t, time.Now().Before(deadline), "the spinner used no CPU in a minute")
		runtime.Gosched()
	}
	// The idle figure is over at least idleSpan: the kernel charges CPU
	// in whole ticks, and a process that wakes for a moment (its
	// runtime's monitor thread) can be charged one; over the 50 ms of
	// minSpan that one tick alone reads as 0.2 cores, over idleSpan as
	// 0.025. This waits out a measuring span, not another goroutine.
	const idleSpan = 400 * time.Millisecond
	time.Sleep(time.Until(added.Add(idleSpan)))
	busyW.Sample()
	idleW.Sample()
	c, ok := busyW.Cores()
	require.True(t, ok)
	require.Greater(t, c, 0.0, "a spinning process uses CPU")
	require.Equal(t, []float64{c}, got)
	c, ok = idleW.Cores()
	require.True(t, ok)
	require.Less(t, c, 0.1, "a process blocked on its stdin uses next to none (at most a stray tick or two over idleSpan)")
}

// TestWatchMeasuresOnlyARunningRootsOwnSpan: the cores are measured only
// over a span each running root ran through. Not while no root runs,
// before the first Add or after the root ended (there is no process to
// measure), not at the root's Add (a process just started has used no
// clock tick, busy or not): a scheduler would take any of these for a
// process that waits. Once the root has been watched for minSpan, a
// sample measures it. The root is a stopped shell, which uses no CPU at
// all: that figure is exactly 0.
func TestWatchMeasuresOnlyARunningRootsOwnSpan(t *testing.T) {
	w := NewWatch(time.Hour, 0) // sampled by hand
	defer w.Stop()
	var got []float64
	w.OnSample(func(c float64, _, _ bool) { got = append(got, c) })
	// spanFrom waits out a measuring span from t0, not another goroutine.
	spanFrom := func(t0 time.Time) { time.Sleep(time.Until(t0.Add(minSpan))) }

	w.Sample()
	spanFrom(time.Now())
	w.Sample()
	require.Empty(t, got, "a span with no root running was measured")

	pid, stop := startStopped(t)
	w.Add(pid)
	added := time.Now()
	require.Empty(t, got, "the sample at Add measured a span its root did not run through")
	spanFrom(added)
	w.Sample()
	require.Equal(t, []float64{0}, got, "a stopped root measures idle over its own span")

	stop()
	spanFrom(time.Now())
	w.Sample()
	require.Len(t, got, 1, "a span after the root ended was measured")
}

// TestWatchTellsARunnableTree: a sample says whether a process of the
// trees was running or waiting for a core as it was read: always for a
// shell spinning in a loop (however little CPU time a loaded machine
// gives it over the span), never for a stopped one.
func TestWatchTellsARunnableTree(t *testing.T) {
	spin := exec.Command("/bin/sh", "-c", "while :; do :; done")
	require.NoError(t, spin.Start())
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	stopped, _ := startStopped(t)
	for _, c := range []struct {
		pid  int
		want bool
	}{{spin.Process.Pid, true}, {stopped, false}} {
		w := NewWatch(time.Hour, 0) // sampled by hand
		var got []bool
		w.OnSample(func(_ float64, _, runnable bool) { got = append(got, runnable) })
		w.Add(c.pid)
		time.Sleep(minSpan) // waits out a measuring span, not another goroutine
		w.Sample()
		w.Stop()
		require.Equal(t, []bool{c.want}, got, "pid %d", c.pid)
	}
}

// startStopped starts a shell that stops itself (SIGSTOP) and returns
// once it has stopped: a process that uses no CPU until it is killed.
func startStopped(t *testing.T) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "kill -STOP $$")
	require.NoError(t, cmd.Start())
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil) // reports the stop, reaps nothing
	require.NoError(t, err)
	require.True(t, ws.Stopped(), "the shell did not stop: %v", ws)
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// TestWatchCPUEvery: with cpuEvery, the cores a spinning process uses
// are measured between the watch's walks of its tree (here an hour
// apart), and its memory is kept too.
func TestWatchCPUEvery(t *testing.T) {
	spin := exec.Command("/bin/sh", "-c", "while :; do :; done")
	require.NoError(t, spin.Start())
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })

	w := NewWatch(time.Hour, 5*time.Millisecond)
	defer w.Stop()
	w.Quick(true)
	measured := make(chan float64, 1)
	w.OnSample(func(c float64, whole, _ bool) {
		if whole {
			return // only the walk in Add: an hour apart
		}
		select {
		case measured <- c:
		default:
		}
	})
	w.Add(spin.Process.Pid) // the one walk of the tree
	deadline := time.After(time.Minute)
	for {
		select {
		case c := <-measured:
			if c > 0 {
				require.Positive(t, w.Peak(), "the quick samples read the process's memory too")
				return
			}
		case <-deadline:
			t.Fatal("no sample between the walks measured the spinning process in a minute")
		}
	}
}

// TestWatchWalkSoonFindsANewChild: a Quick sample reads only the
// processes the last walk found, so a child started since spins unseen
// (the parent, waiting for it, measures idle); WalkSoon's walk finds it
// and measures it busy.
func TestWatchWalkSoonFindsANewChild(t *testing.T) {
	parent := exec.Command("/bin/sh", "-c", "read x; (while :; do :; done) & wait")
	in, err := parent.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		for _, p := range Tree(parent.Process.Pid) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		_ = parent.Wait()
	})

	type sample struct {
		cores float64
		whole bool
	}
	samples := make(chan sample, 1024)
	w := NewWatch(time.Hour, 5*time.Millisecond)
	defer w.Stop()
	w.OnSample(func(c float64, whole, _ bool) { samples <- sample{c, whole} })
	w.Quick(true)
	w.Add(parent.Process.Pid) // the walk: the parent alone
	_, err = io.WriteString(in, "go\n")
	require.NoError(t, err)
	// Wait (bounded) until the child spins and the kernel has accounted
	// some of its CPU time, which the walk then counts as new.
	deadline := time.Now().Add(time.Minute)
	for {
		p := Tree(parent.Process.Pid)
		if len(p) >= 2 && p[1].CPU > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the parent's child used no CPU in a minute")
		runtime.Gosched()
	}
	timeout := time.After(time.Minute)
	for walked := false; ; {
		select {
		case s := <-samples:
			switch {
			case !s.whole:
				require.Less(t, s.cores, 0.5, "a quick sample reads the parent only, which waits")
				if !walked {
					w.WalkSoon()
					w.WalkSoon() // asked twice before it is taken: once
					walked = true
				}
			case walked:
				require.Greater(t, s.cores, 0.0, "the walk finds the spinning child")
				return
			}
		case <-timeout:
			t.Fatal("no walk after WalkSoon in a minute")
		}
	}
}

// TestTreeFindsAChildOfAnyThread starts a child from a thread of this
// process other than its main one (the kernel lists a child under the
// thread that forked it; terraform starts its providers from whichever
// thread runs the goroutine): Tree finds it, though the main thread's own
// list does not hold it.
func TestTreeFindsAChildOfAnyThread(t *testing.T) {
	type started struct {
		cmd *exec.Cmd
		err error
	}
	got := make(chan started, 1)
	release := make(chan struct{})
	var try func(left int)
	try = func(left int) {
		runtime.LockOSThread() // unlocked only on the main thread: another ends with its goroutine
		if syscall.Gettid() == os.Getpid() {
			defer runtime.UnlockOSThread()
			if left == 0 {
				got <- started{err: fmt.Errorf("no goroutine ran on a thread other than the main one")}
				return
			}
			go try(left - 1) // a new goroutine, on another thread
			<-release        // keep the main thread taken until the child is started
			return
		}
		cmd := exec.Command("/bin/sh", "-c", "read x")
		_, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start() // forked by this thread
		}
		got <- started{cmd, err}
		<-release // the thread, and so its list, lives until the test ends
	}
	go try(10)
	s := <-got
	defer close(release)
	require.NoError(t, s.err)
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	pid := s.cmd.Process.Pid

	main, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
	require.NoError(t, err)
	require.NotContains(t, strings.Fields(string(main)), strconv.Itoa(pid), "the child was forked by the main thread: the test shows nothing")
	var pids []int
	for _, p := range Tree(os.Getpid()) {
		pids = append(pids, p.PID)
	}
	require.Contains(t, pids, pid, "Tree missed the child of a thread other than the main one")
}

// TestWatchWalkingWalksEveryNthSample: with walkEvery 3, of the samples
// every interval exactly every third walks the trees; the others read
// the processes found, and still measure them.
func TestWatchWalkingWalksEveryNthSample(t *testing.T) {
	spin := exec.Command("/bin/sh", "-c", "while :; do :; done")
	require.NoError(t, spin.Start())
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })

	w := NewWatchWalking(20*time.Millisecond, 3, 0)
	defer w.Stop()
	flags := make(chan bool, 100)
	w.OnSample(func(_ float64, whole, _ bool) {
		select {
		case flags <- whole:
		default:
		}
	})
	w.Add(spin.Process.Pid)
	var got []bool
	deadline := time.After(time.Minute)
	for len(got) < 9 {
		select {
		case f := <-flags:
			got = append(got, f)
		case <-deadline:
			t.Fatalf("only %d samples in a minute", len(got))
		}
	}
	first := slices.Index(got, true)
	require.GreaterOrEqual(t, first, 0, "no walk in %v", got)
	require.Less(t, first, 3, "samples before the first walk: %v", got)
	for k := first; k < len(got); k++ {
		require.Equal(t, (k-first)%3 == 0, got[k], "sample %d of %v", k, got)
	}
	require.Positive(t, w.Peak())
}
