package admission

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/memory"
)

// TestCoreGateKeepsTheCoreUntilItsProcessIsMeasured: with one core, a
// unit admitted to start a terraform process keeps its core through the
// samples its watch takes before the process runs and the one taken as
// the process starts (neither measures the process: it has used no
// clock tick yet, whatever it is about to do), and gives it to the
// waiting unit once a sample measured the process idle over a span of
// its own. Such samples once freed each unit's core as it was admitted:
// in CI all three units of runner's TestCoreGateHoldsBackWhileBusy were
// let in and spun at once, and that test waited for a wait that never
// came.
func TestCoreGateKeepsTheCoreUntilItsProcessIsMeasured(t *testing.T) {
	gate, waits := newOneCoreGate()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := memory.NewWatch(time.Hour, 0) // sampled by hand, where the unit's watch samples on its own
	defer w.Stop()
	w.OnSample(func(cores float64, whole, runnable bool) { gate.measured(0, cores, whole, runnable) })
	gate.watch(0, w)
	holds := func(msg string) {
		t.Helper()
		gate.mu.Lock()
		defer gate.mu.Unlock()
		require.True(t, gate.busy[0], msg)
	}
	// The next sample, as the watch would take it: DefaultInterval is more
	// than the span a measurement needs. This waits out a measuring span,
	// not another goroutine.
	next := func() { time.Sleep(memory.DefaultInterval) }

	require.NoError(t, gate.Acquire(ctx, 0)) // 0: on the free core, its process not started yet
	b := make(chan error, 1)
	go func() { b <- gate.Acquire(ctx, 1) }()
	require.Equal(t, 1, <-waits)

	w.Sample()
	next()
	w.Sample()
	holds("a sample before 0's process started freed its core")

	pid := stoppedProcess(t) // 0's process: it uses no CPU at all
	w.Add(pid)               // samples at once
	holds("the sample at the start of 0's process freed its core")

	next()
	w.Sample() // 0's process, measured over a span of its own: idle
	select {
	case err := <-b:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("1 never got the core 0's idle process left")
	}
}

// stoppedProcess starts a shell that stops itself (SIGSTOP) and returns
// its PID once it has stopped: a process that uses no CPU until the test
// ends and kills it.
func stoppedProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "kill -STOP $$")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil) // reports the stop, reaps nothing
	require.NoError(t, err)
	require.True(t, ws.Stopped(), "the shell did not stop: %v", ws)
	return cmd.Process.Pid
}
