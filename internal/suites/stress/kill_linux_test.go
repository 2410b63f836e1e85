//go:build linux

package stress

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

var killSeed = flag.Uint64("stress.seed", 6, "seed choosing which runner processes TestKillRunnersConverge kills, and when")

const (
	killProcs       = 3
	killInstances   = 12
	killParallelism = 4
	// Each apply's provisioner waits this long (simulated cloud latency),
	// so that most kills land while terraform holds the state lock and has
	// created the cluster but not yet written it to state.
	killLatency = time.Second
)

// TestKillRunnersConverge SIGKILLs runner processes at the worst moments
// and then runs again: everything must converge.
//
//  1. Three processes start on an empty cache; the registry holds the
//     first package download mid-body, and all three are killed there.
//     The cache must not hold the package (absent, not torn).
//  2. Three processes start again; one or two of them (seeded, logged)
//     are killed in the k-th unit to reach a phase (k past the
//     parallelism, so other units are in flight too): as its workdir is
//     prepared, as its terraform init starts, or while its terraform apply
//     holds the state lock. The others must succeed regardless, on the
//     same instances: the victims' instance flocks and terraform's state
//     locks died with them.
//  3. One process applies everything (and one more instance, whose
//     terraform was killed holding the state lock in a lone run, so its
//     lock note is certainly there) with a fresh log dir: every unit
//     succeeds without ever meeting a state lock, every state holds its
//     resources, the cache holds one package whose files hash to the
//     served zip, and a fresh cache finds it without a download. Exactly
//     two downloads were started in all: the one killed in phase 1 and
//     the one that completed in phase 2.
func TestKillRunnersConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test; skipped under -short")
	}
	w := newWorld(t)
	t.Cleanup(func() { killLeftovers(t, w.dir) })
	instances := span(killInstances)
	cfg := w.config(instances, killParallelism, killLatency)
	rng := rand.New(rand.NewPCG(*killSeed, 0))
	t.Logf("seed %d (rerun with -stress.seed=%d)", *killSeed, *killSeed)

	// Phase 1: killed mid-download.
	gate := w.prov.Hold()
	var procs []*proc
	for i := range killProcs {
		procs = append(procs, startProc(t, fmt.Sprintf("download process %d", i), cfg, nil))
	}
	select {
	case <-gate.Started():
	case p := <-firstExit(procs):
		t.Fatalf("%s ended before any download was held: %v\n%s", p.name, p.err, p.stderr.String())
	}
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		requireKilled(t, p)
	}
	gate.Release()
	require.Equal(t, 1, w.prov.TotalDownloads())
	pkgDir := filepath.Join(w.cache, testprovider.Host)
	_, err := os.Stat(pkgDir)
	require.ErrorIs(t, err, fs.ErrNotExist, "a package dir exists after a download was killed")
	t.Logf("after the mid-download kill: temp files in the cache %v; processes left %v", tempFiles(w.cache), leftovers(w.dir))

	// Phase 2a: a lone process on an instance of its own, killed while its
	// terraform holds the state lock. Nothing else touches that instance
	// until the final run. Host death interrupts terraform (never kills
	// it), so terraform may still be finishing, lock note and all, or may
	// have released its lock already when the final run comes: that run
	// waits for it and must converge either way (checked at the end).
	lone := killInstances + 1
	lv := &victim{k: 1, unitDone: make(chan struct{})}
	lp := startProc(t, "lone process", w.config([]int{lone}, 1, killLatency), func(p *proc, m message) { lv.event(w, p, m) })
	requireKilled(t, lp)
	lv.wg.Wait()
	require.NoError(t, lv.err)
	require.True(t, lv.holding, "the lone process ended before its terraform took the state lock")

	// Phase 2: random victims, each killed in a random phase of its k-th
	// unit to reach it: as the unit's (cold) workdir is being prepared, as
	// its terraform init starts, or while its terraform apply holds the
	// state lock.
	victims := map[int]*victim{}
	for _, i := range rng.Perm(killProcs)[:1+rng.IntN(killProcs-1)] {
		phase := []string{"prepare", "init", "apply"}[rng.IntN(3)]
		victims[i] = &victim{phase: phase, k: killParallelism + 1 + rng.IntN(killParallelism), unitDone: make(chan struct{})}
	}
	for i, v := range victims {
		t.Logf("victim: process %d, killed in the %s phase of the %d-th unit to reach it", i, v.phase, v.k)
	}
	procs = procs[:0]
	for i := range killProcs {
		var onMsg func(*proc, message)
		if v := victims[i]; v != nil {
			onMsg = func(p *proc, m message) { v.event(w, p, m) }
		}
		procs = append(procs, startProc(t, fmt.Sprintf("apply process %d", i), cfg, onMsg))
	}
	for i, p := range procs {
		v := victims[i]
		if v == nil {
			p.requireSucceeded(t, killInstances)
			continue
		}
		requireKilled(t, p)
		v.wg.Wait()
		require.NoError(t, v.err)
		require.NotEmpty(t, v.unit, "victim %d was not killed by the test", i)
		if v.phase == "apply" {
			require.True(t, v.holding, "victim %d: %s ended before its terraform took the state lock", i, v.unit)
		}
		t.Logf("victim %d killed in the %s phase of %s; lock notes now: %v", i, v.phase, v.unit, lockInfos(w.root))
	}
	require.Equal(t, 2, w.prov.TotalDownloads(), "downloads after the second phase")
	t.Logf("after the phase 2 kills: state lock notes %v; processes left %v", lockInfos(w.root), leftovers(w.dir))

	// Phase 3: one run to completion, which must meet no stale lock.
	// Terraform's lock notes of killed applies may still be there; the
	// local backend's lock is an fcntl lock on the state file, which died
	// with the process, so they must not block.
	t.Logf("before the final run: stale state lock notes %v", lockInfos(w.root))
	final := w.config(span(lone), killParallelism, killLatency)
	final.LogDir = filepath.Join(w.dir, "final-logs")
	res := startProc(t, "final process", final, nil).requireSucceeded(t, lone)
	require.Zero(t, res.Downloads, "the final run downloaded the provider again")
	reaped := 0
	for _, u := range res.Results {
		log, err := os.ReadFile(u.Log)
		require.NoError(t, err)
		require.NotContains(t, string(log), "Error acquiring the state lock", "unit %s met a state lock in the final run", u.Unit)
		reaped += strings.Count(string(log), "killed leftover process")
	}
	w.requireStates(t, span(lone))
	w.requireOneCompletePackage(t)
	require.Equal(t, 2, w.prov.TotalDownloads(), "downloads in all")
	// Terraform dies with its runner (tfexec's Pdeathsig), but the provider
	// plugins of a killed terraform are orphaned and keep running. The next
	// run of the instance reaps them (they carry its TF_DATA_DIR), so once
	// every instance has run again nothing is left.
	t.Logf("the final run reaped %d leftover processes of killed runs", reaped)
	require.Empty(t, leftovers(w.dir), "processes left running under the test dir")
}

// victim stops its process in the k-th unit to reach phase. For "prepare"
// and "init" that is as soon as the process reports the phase. For
// "apply" (the default) it is once terraform has written the state lock
// note in the unit's dir, that is, holds the state lock (that terraform
// is the victim's: the victim holds the instance's flock for the whole
// unit), or at the latest when the unit is done.
type victim struct {
	phase    string // "prepare", "init" or "apply" (empty)
	k        int
	stop     func(*proc)   // how to stop it; nil: SIGKILL its process group
	seen     int           // units that reached phase; seen by the stdout reader only
	unit     string        // the k-th unit; written before wg.Add
	unitDone chan struct{} // closed when unit is done
	doneOnce sync.Once
	wg       sync.WaitGroup // the watcher
	holding  bool           // killed holding the state lock; read after wg.Wait
	err      error          // read after wg.Wait
}

func (v *victim) event(w *world, p *proc, m message) {
	switch {
	case m.Phase == v.phase || v.phase == "" && m.Phase == "apply":
		if v.seen++; v.seen != v.k {
			return
		}
		v.unit = m.Unit
		stopProc := v.stop
		if stopProc == nil {
			stopProc = (*proc).kill
		}
		if m.Phase != "apply" {
			stopProc(p)
			return
		}
		home, err := w.home(strings.TrimPrefix(m.Unit, demo.Stack+"/"))
		if err != nil {
			v.err = err
			p.kill()
			return
		}
		dir := filepath.Join(home, "src", filepath.FromSlash(demo.Component))
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			defer stopProc(p)
			written, stop, err := watchWritten(dir, ".terraform.tfstate.lock.info")
			if err != nil {
				v.err = fmt.Errorf("watch %s: %w", dir, err)
				return
			}
			defer stop()
			select {
			case <-written:
				v.holding = true
			case <-v.unitDone:
			case <-p.exited:
			}
		}()
	case m.Phase == "done" && v.unit != "" && m.Unit == v.unit:
		v.doneOnce.Do(func() { close(v.unitDone) })
	}
}

// firstExit delivers the first of procs to exit. Its goroutines end when
// the processes do (at the latest at cleanup, which kills them).
func firstExit(procs []*proc) <-chan *proc {
	ch := make(chan *proc, len(procs))
	for _, p := range procs {
		go func() { <-p.exited; ch <- p }()
	}
	return ch
}

// requireKilled waits for p and checks it died of SIGKILL (not of an error
// of its own, and not by finishing).
func requireKilled(t *testing.T, p *proc) {
	t.Helper()
	<-p.exited
	var ee *exec.ExitError
	require.True(t, errors.As(p.err, &ee), "%s: exit %v, want killed\n%s", p.name, p.err, p.stderr.String())
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%s: %v, want SIGKILL", p.name, p.err)
}

// tempFiles lists the cache's temp dir.
func tempFiles(cache string) []string {
	ents, _ := os.ReadDir(filepath.Join(cache, ".pluginc", "tmp"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// lockInfos lists terraform's local state lock notes under root. They
// outlive a killed terraform, but the lock itself is an fcntl lock on the
// state file, which dies with the process.
func lockInfos(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".tfstate.lock.info") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
