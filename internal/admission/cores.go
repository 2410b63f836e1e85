package admission

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/memory"
)

// Cores is one Run's share of the machine's cores (the core gate): a
// unit's terraform process starts only while fewer units than there are
// cores are busy, so that units overlap their CPU-bound phases (init
// hashing providers, plan and apply loading the configuration and the
// providers) with other units' waits on their cloud, instead of all
// loading at once and then all waiting at once.
//
// Busy is measured, never assumed: a unit counts as busy from the start
// of its process until its process tree (sampled by the unit's memory
// watch, the CPU time of terraform, its providers and provisioners) is
// measured below busyThreshold, with none of its processes runnable, in
// idleSamples samples in a row, and again whenever a later sample
// measures it above or finds a process of it runnable (a spinning
// provisioner that a loaded machine starves of CPU for a span is
// charged no CPU time, but it is runnable whenever it is read). A
// sample measures a span the process ran through (memory.Watch's
// OnSample): none comes for a span before the process starts, as it
// starts (it has used no clock tick yet) or after it ended, so a unit
// admitted to start a process keeps its core until the process itself
// was measured idle, or ended. Sampling cannot see the future: a unit
// that was idle and becomes busy again (an apply that resumes after its
// cloud answered) counts from then on, beside the units started
// meanwhile. A unit whose process waits on the network, a lock or a
// provisioner's sleep holds no core. A unit's process never waits for a
// core while no unit is busy, so the gate cannot hold a Run back for
// good; it only orders starts, earliest unit first (ahead).
//
// A nil *Cores is no gate: nothing waits.
type Cores struct {
	cores  int
	onWait func(Wait)

	mu      sync.Mutex
	busy    map[int]bool          // units counted on a core
	waiting map[int]bool          // units waiting for a core
	first   map[int]int           // the order in which units first asked for a core
	idle    map[int]int           // consecutive samples below the threshold, per busy unit
	running map[int]bool          // units with a terraform process running
	waited  map[int]time.Duration // how long each unit waited for a core in all
	watches map[int]*memory.Watch // each unit's watch: sampled every gateSampleEvery while busy
	changed chan struct{}         // closed (and replaced) when a unit stops counting
}

// busyCores is the share of a core above which a unit's process tree
// counts as busy on a machine with a core for every runnable thread: a
// terraform waiting on its cloud, with its provider plugins, measures a
// few percent. On a machine with more runnable threads than cores, a
// process that could use a whole core gets only its share, so the
// threshold is scaled by that share (see busyThreshold).
const busyCores = 0.25

// busyThreshold is busyCores scaled by the share of a core a runnable
// thread gets now: the machine's cores over its runnable threads (the
// fourth field of /proc/loadavg), at most 1. Without /proc it is
// busyCores.
func busyThreshold() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return busyCores
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return busyCores
	}
	running, _, _ := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(running)
	if err != nil || n <= runtime.NumCPU() {
		return busyCores
	}
	return busyCores * float64(runtime.NumCPU()) / float64(n)
}

// NewCores is a core gate of cores cores, or of the Go runtime's
// GOMAXPROCS (the machine's cores, or its cgroup's CPU limit) for 0.
// onWait, if not nil, hears each unit's wait for a core as it begins
// and as it ends.
func NewCores(cores int, onWait func(Wait)) *Cores {
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	if onWait == nil {
		onWait = func(Wait) {}
	}
	return &Cores{cores: cores, onWait: onWait, busy: map[int]bool{}, waiting: map[int]bool{}, first: map[int]int{}, idle: map[int]int{},
		running: map[int]bool{}, waited: map[int]time.Duration{}, watches: map[int]*memory.Watch{}, changed: make(chan struct{})}
}

// Acquire waits until unit i may start a terraform process: fewer busy
// units than cores, or none busy at all. The unit then counts as busy
// until its process is measured idle (through the memory gate's watch
// of it) or Release. A unit that has to wait is reported to onWait as
// it begins to wait and when it may go on, with how long it waited.
// The error, when ctx ends first, wraps ctx's cause.
func (g *Cores) Acquire(ctx context.Context, i int) error {
	if g == nil {
		return nil
	}
	var start time.Time
	g.mu.Lock()
	if _, seen := g.first[i]; !seen {
		g.first[i] = len(g.first)
	}
	g.mu.Unlock()
	for {
		g.mu.Lock()
		ok := g.busy[i] || g.ahead(i) < g.cores-len(g.busy)
		ch := g.changed
		if ok {
			g.count(i)
			g.running[i] = true
			delete(g.waiting, i)
			if !start.IsZero() {
				g.waited[i] += time.Since(start)
			}
		} else {
			g.waiting[i] = true
		}
		g.mu.Unlock()
		if ok {
			if !start.IsZero() {
				g.onWait(Wait{Unit: i, Waited: time.Since(start)})
			}
			return nil
		}
		if start.IsZero() {
			start = time.Now()
			g.onWait(Wait{Unit: i})
		}
		select {
		case <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			delete(g.waiting, i)
			g.wake() // the units behind it move up
			g.mu.Unlock()
			return fmt.Errorf("waiting for a core: %w", context.Cause(ctx))
		}
	}
}

// ahead is how many waiting units first asked for a core before unit i;
// g.mu is held. Freed cores go to the earliest units: a unit whose init
// is done starts its plan or apply before later units start their init,
// so units reach their waits on the cloud (where they hold no core) as
// early as they can, one after another.
func (g *Cores) ahead(i int) int {
	n := 0
	for j := range g.waiting {
		if g.first[j] < g.first[i] {
			n++
		}
	}
	return n
}

// Release says that unit i's terraform process ended: it no longer
// counts.
func (g *Cores) Release(i int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.running, i)
	g.stopCounting(i)
}

// idleSamples is how many samples in a row must measure a unit below
// the threshold before its core is free. Each sample measures the last
// 50 ms or more (memory.Watch's span), and the one that frees a core
// walks the unit's process tree (a quick sample that measures it idle
// asks for that walk at once): one is enough. A terraform that only
// paused on its disk is counted busy again at its next sample; the cost
// of that mistake is one more process loading beside the others for a
// moment, while every sample of delay costs each unit's wait an idle
// core.
const idleSamples = 1

// gateSampleEvery is how often a busy unit's processes are sampled under
// the gate, between the watch's walks of the process trees: a freed
// core is found within this plus the measured span, not after the
// 100 ms or more of the memory budget's samples. Units not counted busy
// are not sampled that often: their next walk finds them busy soon
// enough, and the gate's reads stay a few files per core.
const gateSampleEvery = 20 * time.Millisecond

// measured takes a sample of unit i's process tree: busy while it uses
// busyThreshold or more of a core or a process of it is runnable; after
// idleSamples samples that say neither, the unit's core is free for
// another unit. A quick sample (not whole: the processes found before,
// not a new provisioner or plugin) that measures the unit idle only
// asks for a walk of its tree at once: the walk's sample decides.
func (g *Cores) measured(i int, cores float64, whole, runnable bool) {
	if g == nil {
		return
	}
	busy := runnable || cores >= busyThreshold()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.running[i]:
	case busy:
		g.count(i)
		delete(g.idle, i)
	case g.busy[i] && !whole:
		if w := g.watches[i]; w != nil {
			w.WalkSoon()
		}
	case g.busy[i]:
		if g.idle[i]++; g.idle[i] >= idleSamples {
			g.stopCounting(i)
		}
	}
}

// watch gives the gate unit i's watch of its process trees (one per
// attempt): the gate turns its samples every gateSampleEvery on while
// the unit counts as busy, the only time they can free a core sooner.
func (g *Cores) watch(i int, w *memory.Watch) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.watches[i] = w
	w.Quick(g.busy[i])
}

// count counts unit i as busy; g.mu is held.
func (g *Cores) count(i int) {
	g.busy[i] = true
	if w := g.watches[i]; w != nil {
		w.Quick(true)
	}
}

// stopCounting drops unit i from the busy units and wakes the waiting
// ones; g.mu is held.
func (g *Cores) stopCounting(i int) {
	if !g.busy[i] {
		return
	}
	delete(g.busy, i)
	delete(g.idle, i)
	if w := g.watches[i]; w != nil {
		w.Quick(false)
	}
	g.wake()
}

// wake wakes every waiting unit to look again; g.mu is held.
func (g *Cores) wake() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Waited is how long unit i waited for a core in all.
func (g *Cores) Waited(i int) time.Duration {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waited[i]
}
