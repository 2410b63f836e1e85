package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/testprovider/provider"
	"github.com/tfisolate/tfisolate/workdir"
)

// The memory scenario, at a size that suits a shared 2-core machine:
// units whose provider holds memAllocMiB MiB resident, memUnits of them,
// under a budget that holds two at a time, not all.
const (
	memUnits    = 6
	memAllocMiB = 300
	memBudget   = 1 << 30
)

// memoryUnits are n plans of one component whose provider allocates and
// touches mib MiB (and holds them for a moment, as a slow cloud would).
func memoryUnits(t *testing.T, w *world, n, mib int) []Unit {
	src := w.component(t, "big", itemComponent)
	var units []Unit
	for i := range n {
		inst := fmt.Sprintf("big-%02d", i)
		units = append(units, Unit{
			Workdir: workdir.Spec{Stack: "mem", Instance: inst, Source: src,
				Files: files(t, map[string]any{"name": inst}, filepath.Join(w.dir, "states", inst+".tfstate"))},
			Env: map[string]string{provider.AllocEnv: fmt.Sprint(mib), provider.AllocHoldEnv: "300ms"},
		})
	}
	return units
}

// treeSampler samples, independently of the runner, the resident memory
// of every process under this test process (this process left out)
// until stopped, and keeps the highest sum.
type treeSampler struct {
	stop chan struct{}
	done chan struct{}
	peak int64
}

func sampleTree() *treeSampler {
	s := &treeSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			procs := memory.Tree(os.Getpid())
			if len(procs) > 0 {
				s.peak = max(s.peak, memory.Sum(procs[1:]))
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *treeSampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// memEvents records the memory-wait events and the order units ended.
type memEvents struct {
	mu       sync.Mutex
	waits    []Event // PhaseMemoryWait
	admitted []string
}

func (m *memEvents) add(e Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Phase == PhaseMemoryWait {
		m.waits = append(m.waits, e)
		if e.MemoryWait > 0 {
			m.admitted = append(m.admitted, e.Unit)
		}
	}
}

func TestMemoryBudgetKeepsUnitsWithinIt(t *testing.T) {
	w := newWorld(t)
	units := memoryUnits(t, w, memUnits, memAllocMiB)
	ids := make([]string, len(units))
	for i := range units {
		ids[i] = units[i].id()
	}

	// First Run: nothing measured yet.
	ev := &memEvents{}
	r := w.runner(t, WithParallelism(memUnits), WithMemoryBudget(memBudget), WithEvents(ev.add))
	s := sampleTree()
	rep, err := r.Run(testCtx(t), Plan, units...)
	together := s.Stop()
	require.NoError(t, err)
	var peak int64
	waited := 0
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		require.GreaterOrEqual(t, res.MemoryPeak, int64(memAllocMiB<<20), "%s: the provider's allocation is in the unit's peak", res.Unit)
		peak = max(peak, res.MemoryPeak)
		if res.MemoryWait > 0 {
			waited++
		}
	}
	t.Logf("first run: unit peak %d MiB, all units together at most %d MiB (budget %d MiB), %d units waited for memory",
		peak>>20, together>>20, memBudget>>20, waited)
	require.LessOrEqual(t, together, int64(memBudget), "the units' processes together stayed within the budget")
	require.Positive(t, waited, "units waited for memory")
	require.Positive(t, together, "the sampler saw the units' processes")
	// Units were admitted in ID order, none overtaking another.
	require.True(t, slices.IsSorted(ev.admitted), "admitted in order: %v", ev.admitted)
	require.Equal(t, unmeasuredPeak, ev.waits[0].Memory, "nothing measured yet: the first to wait is expected at the unmeasured size")
	b, err := json.Marshal(rep.Results[len(rep.Results)-1])
	require.NoError(t, err)
	require.Contains(t, string(b), `"memory_peak_bytes":`)
	require.Contains(t, string(b), `"memory_wait_seconds":`)

	// The peak is recorded beside the workdirs, private to this user.
	fi, err := os.Stat(filepath.Join(w.wd.Root(), memoryFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Second Run, a new Runner: it starts informed by the first.
	ev2 := &memEvents{}
	r2 := w.runner(t, WithParallelism(memUnits), WithMemoryBudget(memBudget), WithEvents(ev2.add))
	s = sampleTree()
	rep, err = r2.Run(testCtx(t), Plan, units...)
	together = s.Stop()
	require.NoError(t, err)
	require.LessOrEqual(t, together, int64(memBudget))
	require.NotEmpty(t, ev2.waits)
	first := ev2.waits[0]
	require.Equal(t, peak, first.Memory, "the first unit to wait is expected at the peak the first Run measured")
	require.True(t, slices.IsSorted(ev2.admitted), "admitted in order: %v", ev2.admitted)
	t.Logf("second run: all units together at most %d MiB", together>>20)
}
