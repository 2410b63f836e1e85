package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/admission"
	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider/provider"
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
	require.Equal(t, admission.UnmeasuredPeak, ev.waits[0].Memory, "nothing measured yet: the first to wait is expected at the unmeasured size")
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

// memCgroup is a memory cgroup this test made under its own, limited to
// limit bytes; it is removed at cleanup.
type memCgroup struct {
	dir string
	v2  bool
}

// newMemCgroup makes the cgroup, or skips the test saying why it cannot.
func newMemCgroup(t *testing.T, limit int64) *memCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a memory cgroup needs root")
	}
	parent, v2 := memory.CgroupDir()
	if parent == "" {
		t.Skip("no memory cgroup found for this process (/proc/self/cgroup, /proc/self/mountinfo)")
	}
	// A child of this process's own cgroup: whatever limits the test
	// runs under still apply to it.
	dir := filepath.Join(parent, fmt.Sprintf("tfisolate-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup under %s: %v", parent, err)
	}
	cg := &memCgroup{dir: dir, v2: v2}
	t.Cleanup(func() {
		// Its processes have ended (the child host was waited for);
		// rmdir of an empty cgroup is all that is left.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond) // the kernel frees a dying cgroup's pages asynchronously
		}
	})
	write := func(name, v string) error { return os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644) }
	var err error
	if v2 {
		err = write("memory.max", fmt.Sprint(limit))
		if err == nil {
			err = write("memory.swap.max", "0")
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
	} else {
		err = write("memory.limit_in_bytes", fmt.Sprint(limit))
		if _, serr := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil && serr == nil {
			err = write("memory.memsw.limit_in_bytes", fmt.Sprint(limit)) // no swapping out of the OOM
		}
	}
	if err != nil {
		cgroupUnusable(t, "cannot limit the memory cgroup %s: %v", dir, err)
	}
	return cg
}

// cgroupUnusable skips a test whose memory cgroup was made but cannot be
// used, saying why, except under CI=true: there a cgroup that can be made
// must work, or the memory tests would pass by never running.
func cgroupUnusable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("under CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// runIn runs a memory child host inside the cgroup and returns its report.
func (cg *memCgroup) runIn(t *testing.T, cfg memoryChild) *Report {
	t.Helper()
	return cg.runChild(t, cfg).Report
}

// runChild is runIn, with what the child found through errors.Is.
func (cg *memCgroup) runChild(t *testing.T, cfg memoryChild) memoryChildReport {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	var stderr syncBuffer
	p := childproc.Start(t, memoryChildRole, childproc.WithEnv(childConfigEnv+"="+string(b)),
		childproc.WithStderr(&stderr), childproc.WithTimeout(childTimeout))
	err = os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(fmt.Sprint(p.PID())), 0o644)
	if err != nil {
		_ = p.Kill()
		cgroupUnusable(t, "cannot move a process into the memory cgroup %s: %v", cg.dir, err)
	}
	_, err = p.Stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	require.NoError(t, p.Stdin.Close())
	select {
	case <-p.Done():
	case <-time.After(5 * time.Minute):
		_ = p.Kill()
		t.Fatalf("the child host did not finish in 5 minutes; stdout:\n%s\nstderr:\n%s", p.Output(), stderr.String())
	}
	require.NoError(t, p.Wait(), "child host: stdout:\n%s\nstderr:\n%s", p.Output(), stderr.String())
	lines := strings.Split(strings.TrimSpace(p.Output()), "\n")
	var rep memoryChildReport
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &rep), "child host: stdout:\n%s", p.Output())
	require.NotNil(t, rep.Report, "child host: stdout:\n%s", p.Output())
	return rep
}

// The failure mode is real, and the budget prevents it: in a cgroup too
// small for all units at once, the units get OOM-killed without a budget
// and are reported as out of memory; with the budget read from the
// cgroup, none is and all succeed.
func TestMemoryBudgetPreventsOOMKillsInACgroup(t *testing.T) {
	const limit = 1 << 30
	cg := newMemCgroup(t, limit)
	w := newWorld(t)
	units := memoryUnits(t, w, memUnits, memAllocMiB)
	// Warm the cache and the workdirs outside the cgroup: init configures
	// no provider, so nothing is allocated.
	_, err := w.runner(t, WithParallelism(memUnits)).Run(testCtx(t), Init, units...)
	require.NoError(t, err)
	base := memoryChild{TF: w.tf, Root: w.wd.Root(), Cache: w.cache.Dir(), Env: units[0].Env}
	for _, u := range units {
		base.Specs = append(base.Specs, u.Workdir)
	}

	off := base
	off.Budget, off.NoRetry = NoMemoryBudget, true
	rep := cg.runIn(t, off)
	killed := 0
	for _, res := range rep.Results {
		t.Logf("budget off: %s %s peak %d MiB out_of_memory=%v err=%v", res.Unit, res.Status, res.MemoryPeak>>20, res.OutOfMemory, res.Err)
		if res.Status == Succeeded {
			continue
		}
		require.True(t, res.OutOfMemory, "%s failed for memory and is reported so: %v", res.Unit, res.Err)
		require.ErrorContains(t, res.Err, ErrOutOfMemory.Error())
		killed++
	}
	require.Positive(t, killed, "without a budget, the kernel killed units for memory")

	// The same without a budget, with the retry after an OOM kill: a
	// killed unit runs once more when fewer units run; never twice.
	retried := base
	retried.Budget = NoMemoryBudget
	rep = cg.runIn(t, retried)
	again := 0
	for _, res := range rep.Results {
		t.Logf("budget off, retry on: %s %s retries %d out_of_memory=%v", res.Unit, res.Status, res.Retries, res.OutOfMemory)
		require.LessOrEqual(t, res.Retries, 1, "%s: retried once at most", res.Unit)
		if res.Status != Succeeded {
			require.True(t, res.OutOfMemory, "%s: %v", res.Unit, res.Err)
			require.Equal(t, 1, res.Retries, "%s was killed, retried, and killed again", res.Unit)
		}
		again += res.Retries
	}
	require.Positive(t, again, "killed units were retried")

	on := base
	on.Budget = 0 // read from the machine: the cgroup's limit
	rep = cg.runIn(t, on)
	for _, res := range rep.Results {
		t.Logf("budget on: %s %s peak %d MiB wait %s", res.Unit, res.Status, res.MemoryPeak>>20, res.MemoryWait)
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		require.False(t, res.OutOfMemory)
		require.Zero(t, res.Retries, "%s was never killed, so never retried", res.Unit)
	}
}

// A unit expected to use more than the whole budget runs alone, with a
// warning that names it.
func TestMemoryUnitOverTheBudgetRunsAlone(t *testing.T) {
	w := newWorld(t)
	units := memoryUnits(t, w, 3, 200)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// Learn the units' peak first.
	_, err := w.runner(t, WithParallelism(3), WithMemoryBudget(1<<30)).Run(testCtx(t), Plan, units[:1]...)
	require.NoError(t, err)
	r := w.runner(t, WithParallelism(3), WithMemoryBudget(100<<20), WithLogger(log))
	s := sampleTree()
	rep, err := r.Run(testCtx(t), Plan, units...)
	together := s.Stop()
	require.NoError(t, err)
	var peak int64
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status)
		peak = max(peak, res.MemoryPeak)
		require.Contains(t, logs.String(), "unit="+res.Unit, "a warning names %s", res.Unit)
	}
	require.Contains(t, logs.String(), "unit expects more memory than the whole budget; it runs alone")
	t.Logf("unit peak %d MiB, together at most %d MiB", peak>>20, together>>20)
	require.Less(t, together, peak*3/2, "one unit at a time")
}

// What a heavy run taught is not forgotten by a lighter command (DESIGN
// invariant 18): an Output Run of a component, whose terraform starts no
// provider, does not replace its apply peak, so the next Apply of units
// that together exceed the budget is still held to it.
func TestMemoryRecordKeepsHeavyRunsAfterOutput(t *testing.T) {
	w := newWorld(t)
	units := memoryUnits(t, w, memUnits, memAllocMiB)

	// Apply once: the record learns the apply peak.
	rep, err := w.runner(t, WithParallelism(memUnits), WithMemoryBudget(memBudget)).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	var applyPeak int64
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		applyPeak = max(applyPeak, res.MemoryPeak)
	}
	require.GreaterOrEqual(t, applyPeak, int64(memAllocMiB<<20))

	// A light Run of the same component: output starts no provider.
	rep, err = w.runner(t, WithParallelism(memUnits), WithMemoryBudget(memBudget)).Run(testCtx(t), Output, units...)
	require.NoError(t, err)
	var outputPeak int64
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		outputPeak = max(outputPeak, res.MemoryPeak)
	}
	require.Less(t, outputPeak, int64(memAllocMiB<<20), "output is light")

	// Apply again, a new Runner: the units together, at about the apply
	// peak each, exceed the budget, so they must wait.
	require.Greater(t, int64(len(units))*applyPeak, int64(memBudget))
	ev := &memEvents{}
	r := w.runner(t, WithParallelism(memUnits), WithMemoryBudget(memBudget), WithEvents(ev.add))
	s := sampleTree()
	rep, err = r.Run(testCtx(t), Apply, units...)
	together := s.Stop()
	require.NoError(t, err)
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
	}
	t.Logf("apply peak %d MiB, output peak %d MiB; second apply: all units together at most %d MiB (budget %d MiB), %d memory waits",
		applyPeak>>20, outputPeak>>20, together>>20, memBudget>>20, len(ev.waits))
	require.LessOrEqual(t, together, int64(memBudget), "the units' processes together stayed within the budget")
	require.NotEmpty(t, ev.waits, "units waited for memory")
	require.GreaterOrEqual(t, ev.waits[0].Memory, applyPeak, "the apply is expected at what the last apply measured, not at output's peak")
}

// A provider the kernel kills for memory while it starts (before
// go-plugin's handshake, so terraform says "Failed to load plugin
// schemas" with go-plugin's start-up failure, not that a plugin died
// mid-call) is reported as out of memory without a budget, and a plan
// killed so runs again once the unit that outlived it is done, and
// succeeds: memory allows one start-up at a time.
func TestOutOfMemoryWhileAProviderStarts(t *testing.T) {
	const (
		limit    = 1536 << 20
		startMiB = 900 // one start-up fits in the cgroup, two do not
		units    = 2
	)
	cg := newMemCgroup(t, limit)
	w := newWorld(t)
	us := memoryUnits(t, w, units, 0)
	// Init outside the cgroup and without the start-up allocation: the
	// cache and the workdirs are warm, the Runs below only plan.
	_, err := w.runner(t, WithParallelism(units)).Run(testCtx(t), Init, us...)
	require.NoError(t, err)
	base := memoryChild{TF: w.tf, Root: w.wd.Root(), Cache: w.cache.Dir(), Budget: NoMemoryBudget}
	for _, u := range us {
		base.Specs = append(base.Specs, u.Workdir)
	}
	// Each Run's start-ups meet afresh: the first two hold their
	// allocation at once, which the cgroup cannot hold.
	env := func() map[string]string {
		return map[string]string{provider.StartAllocEnv: fmt.Sprint(startMiB),
			provider.StartTogetherEnv: fmt.Sprintf("%s:%d", t.TempDir(), units)}
	}

	off := base
	off.NoRetry, off.Env = true, env()
	rep := cg.runChild(t, off)
	killed := 0
	for _, res := range rep.Report.Results {
		t.Logf("no retry: %s %s peak %d MiB out_of_memory=%v err=%v", res.Unit, res.Status, res.MemoryPeak>>20, res.OutOfMemory, res.Err)
		if res.Status == Succeeded {
			continue
		}
		killed++
		require.Contains(t, rep.IsOutOfMemory, res.Unit, "%s: its error wraps ErrOutOfMemory: %v", res.Unit, res.Err)
		require.True(t, res.OutOfMemory, res.Unit)
	}
	require.Positive(t, killed, "the kernel killed a provider while it started")

	on := base
	on.Env = env()
	rep = cg.runChild(t, on)
	retried := 0
	for _, res := range rep.Report.Results {
		t.Logf("retry: %s %s retries %d out_of_memory=%v err=%v", res.Unit, res.Status, res.Retries, res.OutOfMemory, res.Err)
		require.Equal(t, Succeeded, res.Status, "%s: retried when memory allowed, and succeeded: %v", res.Unit, res.Err)
		retried += res.Retries
	}
	require.Positive(t, retried, "the unit killed while its provider started was planned again")
	require.Empty(t, rep.IsOutOfMemory)
}
