//go:build linux

package stress

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInterruptedRunnersReleaseLocks stops two runner processes with
// SIGTERM (what a CI system sends on cancel) while their terraform holds a
// state lock, both on the same instances. Each process cancels its run:
// terraform gets an interrupt, stops, and releases its state lock (its
// lock note is gone), the interrupted units are Canceled and none Failed,
// the processes exit on their own with nothing left running, and a
// second run converges.
func TestInterruptedRunnersReleaseLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test; skipped under -short")
	}
	w := newWorld(t)
	t.Cleanup(func() { killLeftovers(t, w.dir) })
	instances := span(killInstances)
	cfg := w.config(instances, killParallelism, killLatency)
	term := func(p *proc) { _ = p.Cmd.Process.Signal(syscall.SIGTERM) }

	victims := []*victim{
		{k: killParallelism + 1, stop: term, unitDone: make(chan struct{})},
		{k: killParallelism + 2, stop: term, unitDone: make(chan struct{})},
	}
	var procs []*proc
	for i, v := range victims {
		procs = append(procs, startProc(t, fmt.Sprintf("process %d", i), cfg, func(p *proc, m message) { v.event(w, p, m) }))
	}
	for i, p := range procs {
		v := victims[i]
		<-p.exited
		v.wg.Wait()
		require.NoError(t, v.err)
		require.True(t, v.holding, "process %d: %s ended before its terraform took the state lock", i, v.unit)
		require.NotNil(t, p.res, "process %d printed no result (exit %v)\n%s", i, p.err, p.stderr.String())
		require.Error(t, p.err, "process %d exited 0 after SIGTERM", i)
		counts := map[string]int{}
		for _, u := range p.res.Results {
			counts[u.Status]++
			if u.Status == "failed" {
				log, _ := os.ReadFile(u.Log)
				t.Fatalf("process %d: unit %s failed after SIGTERM: %s\n%s", i, u.Unit, u.Err, tail(log, 3000))
			}
			if u.Unit == v.unit {
				require.Equal(t, "canceled", u.Status, "the unit interrupted inside terraform: %s", u.Err)
			}
		}
		t.Logf("process %d, interrupted in %s: %v", i, v.unit, counts)
	}
	require.Empty(t, lockInfos(w.root), "an interrupted terraform kept its state lock")
	require.Empty(t, leftovers(w.dir), "processes left running after the runners exited")

	final := cfg
	final.LogDir = filepath.Join(w.dir, "final-logs")
	startProc(t, "final process", final, nil).requireSucceeded(t, killInstances)
	w.requireStates(t, instances)
	w.requireOneCompletePackage(t)
	require.Equal(t, 1, w.prov.TotalDownloads())
}
