package memory

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var pageSize = int64(os.Getpagesize())

// Proc is one process of a tree, its resident memory and the CPU time
// it has used.
type Proc struct {
	PID int
	RSS int64         // bytes
	CPU time.Duration // user and system time since it started

	start    uint64 // start time in clock ticks since boot: with PID, one process
	runnable bool   // running or waiting for a core when read (see stat)
}

// Tree returns pid and every process under it, each with its resident
// memory, parents before their children. It is empty when pid is gone.
// Children are read from /proc/PID/task/TID/children (a child is listed
// under the thread that forked it), so the cost is the tree's own.
func Tree(pid int) []Proc {
	var out []Proc
	seen := map[int]bool{}
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		st, ok := readStat(p)
		if !ok {
			continue
		}
		out = append(out, Proc{PID: p, RSS: st.rss, CPU: st.cpu, start: st.start, runnable: st.runnable})
		stack = append(stack, children(p)...)
	}
	return out
}

// Sum is the resident memory of procs together.
func Sum(procs []Proc) int64 {
	var n int64
	for _, p := range procs {
		n += p.RSS
	}
	return n
}

// clockTick is the unit of /proc's CPU times: USER_HZ, 100 on every
// Linux, whatever the kernel's own tick rate.
const clockTick = 10 * time.Millisecond

// stat is what one read of /proc/PID/stat gives a sample.
type stat struct {
	rss   int64         // resident set, bytes (field 24)
	cpu   time.Duration // utime + stime (fields 14 and 15)
	start uint64        // start time in clock ticks since boot (field 22)
	// runnable: the state (field 3) is R, running or waiting for a core,
	// of the process's main thread. A process the machine starves of
	// CPU is charged little CPU time, but it is runnable.
	runnable bool
}

// readStat reads pid's /proc/PID/stat; false when it is gone. The
// command name (field 2) may hold spaces and parentheses, so the fields
// are counted from its closing parenthesis.
func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[i+2:]) // f[0] is field 3
	if len(f) < 22 {
		return stat{}, false
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(string(f[k-3]), 10, 64); return n }
	return stat{rss: num(24) * pageSize, cpu: time.Duration(num(14)+num(15)) * clockTick, start: uint64(num(22)),
		runnable: string(f[0]) == "R"}, true
}

// children lists pid's children, from each of its threads (a child is
// listed by the thread that forked it).
//
// A thread's list is read through the thread's own /proc/TID entry, not
// /proc/PID/task/TID: the kernel drops a process's cached /proc/PID
// entries when the process is reaped, in the reaper's time, and with the
// per-thread files looked up under /proc/PID the runner's wait for a
// terraform it watched took about 1.3 ms of this thread's CPU and 5 ms
// of the unit's time (0.07 ms and 0.1 ms read this way; measured on the
// project's 2-core test machine). A /proc/TID entry is dropped when its
// thread ends, in that thread's time: the work moves out of the unit's
// path (the host's and terraform's CPU together did not measurably
// change). The thread is checked to still be pid's after the read, so a
// TID reused by another process in between is never read as pid's.
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		tid := t.Name()
		b, err := os.ReadFile("/proc/" + tid + "/task/" + tid + "/children")
		if err != nil {
			continue
		}
		if _, err := os.Stat(dir + tid); err != nil {
			continue // the thread ended: its TID may name another's now
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// StartTime is pid's start time in clock ticks since boot (field 22 of
// /proc/PID/stat): with the PID it names one process, never a later one
// that reused the PID. 0 when pid is gone.
func StartTime(pid int) uint64 {
	st, _ := readStat(pid)
	return st.start
}

// DefaultInterval is how often a Watch samples unless told otherwise: a
// sample reads a few small files per process and thread of the trees,
// and a peak shorter than the interval can be missed.
const DefaultInterval = 100 * time.Millisecond

// minSpan is the shortest time between two samples the cores used are
// measured over: CPU times come in clock ticks, so a shorter span says
// little. A sample sooner than that (Add samples at once) keeps the
// earlier one as the baseline.
const minSpan = 5 * clockTick

// Watch samples the process trees of its roots while they run: their
// resident memory and how many cores they used.
type Watch struct {
	sampling sync.Mutex // one Sample at a time; mu is not held while /proc is read
	mu       sync.Mutex
	roots    []root
	current  int64
	peak     int64
	// known are the processes the last whole-tree sample found: between
	// two of those, a CPU sample reads only their /proc/PID/stat.
	known []root
	// marks are the CPU time of each process at recent samples, oldest
	// first: a sample's cores used are what the processes used since the
	// newest mark at least minSpan old (in both: a process that ended is
	// not counted as a drop, one new since is counted from its start),
	// provided every root the sample read was read at that mark too.
	marks    []cpuMark
	cores    float64
	measured bool
	onSample func(cores float64, whole, runnable bool)
	walk     chan struct{} // WalkSoon: a whole sample at once
	quick    atomic.Bool   // the samples every cpuEvery are on
	// exits holds a pidfd (-1: none could be opened) on each process a
	// walk found, until the kernel says how it ended (guarded by
	// sampling); killed are those SIGKILL ended (guarded by mu).
	exits  map[root]*exitWatch
	killed []Proc

	stop chan struct{}
	done chan struct{}
}

type root struct {
	pid   int
	start uint64
}

// exitWatch is a process a walk found: a pidfd on it, and its resident
// memory when last read.
type exitWatch struct {
	fd  int
	rss int64
}

// cpuMark is the CPU time of each process of the trees at one moment,
// and the roots that were running then.
type cpuMark struct {
	at    time.Time
	cpu   map[int]time.Duration
	roots []root
}

// NewWatch starts sampling every interval (DefaultInterval when <= 0);
// Stop ends it. With cpuEvery > 0, while Quick is on, the processes the
// last sample found are also read every cpuEvery in between (one small
// file each, no walk of the trees): the cores used are then measured
// that often, over the last minSpan, which is how soon a scheduler
// learns a unit went idle.
func NewWatch(interval, cpuEvery time.Duration) *Watch {
	return NewWatchWalking(interval, 1, cpuEvery)
}

// NewWatchWalking is NewWatch where only every walkEvery-th of the
// samples every interval walks the trees (and Add's, and WalkSoon's);
// the others read the processes the last walk found. A walk reads each
// thread's list of children, a file per thread (a terraform has a dozen
// or more), where the others read one file per process: a child started
// since the last walk is counted up to walkEvery intervals later.
func NewWatchWalking(interval time.Duration, walkEvery int, cpuEvery time.Duration) *Watch {
	if interval <= 0 {
		interval = DefaultInterval
	}
	walkEvery = max(walkEvery, 1)
	w := &Watch{stop: make(chan struct{}), done: make(chan struct{}), walk: make(chan struct{}, 1), exits: map[root]*exitWatch{}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		var quick <-chan time.Time
		if cpuEvery > 0 && cpuEvery < interval {
			q := time.NewTicker(cpuEvery)
			defer q.Stop()
			quick = q.C
		}
		for tick := 1; ; {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.sample(tick%walkEvery == 0)
				tick++
			case <-w.walk:
				w.Sample()
			case <-quick:
				if w.quick.Load() {
					w.sample(false)
				}
			}
		}
	}()
	return w
}

// OnSample has f called after every sample that measured the cores the
// trees used, with whether the sample walked the trees. A sample
// measures only a span that each running root ran through, watched
// from its start: none in the first minSpan after a root's Add (a
// process just started has used no clock tick yet, whatever it is
// about to do), none while no root runs (before the first Add, once
// the roots ended), so an idle figure is always one of a running
// process. A sample that did not walk (a Quick one) read only the
// processes found before, so it cannot see a process started since,
// and a tree it measures idle may be busy in a new child (WalkSoon
// tells). runnable says a process the sample read was running or
// waiting for a core as it was read (its main thread): it wants a core
// now, however little CPU time a machine with more runnable threads
// than cores gave it over the span (a process starved for the span
// measures the same 0 cores as one that waits on the network). f runs
// while the sample holds the Watch; it must not call Sample. Set it
// before the first Add.
func (w *Watch) OnSample(f func(cores float64, whole, runnable bool)) {
	w.mu.Lock()
	w.onSample = f
	w.mu.Unlock()
}

// WalkSoon asks for a sample that walks the trees as soon as the
// Watch's goroutine can take it, without waiting for it; asking again
// before it is taken asks once.
func (w *Watch) WalkSoon() {
	select {
	case w.walk <- struct{}{}:
	default:
	}
}

// Quick turns the samples every cpuEvery (NewWatch) on or off: a
// scheduler needs them only for the trees it counts as busy, and each
// costs a read per process.
func (w *Watch) Quick(on bool) { w.quick.Store(on) }

// Add adds the tree under pid, which must be running, and samples at
// once.
func (w *Watch) Add(pid int) {
	st := StartTime(pid)
	if st == 0 {
		return
	}
	w.mu.Lock()
	w.roots = append(w.roots, root{pid: pid, start: st})
	w.mu.Unlock()
	w.Sample()
}

// Sample samples now: the current sum of the live roots' trees, and the
// peak. A root that ended (or whose PID now names another process) is
// dropped.
func (w *Watch) Sample() { w.sample(true) }

// sample walks the trees (whole), or reads only the processes the last
// whole sample found.
func (w *Watch) sample(whole bool) {
	w.sampling.Lock()
	defer w.sampling.Unlock()
	w.mu.Lock()
	roots, known := slices.Clone(w.roots), w.known
	w.mu.Unlock()
	var sum int64
	gone := map[root]bool{}
	cpu := map[int]time.Duration{}
	var live []root // the roots this sample read: running
	runnable := false
	if whole {
		known = nil
		found := map[root]bool{}
		for _, r := range roots {
			if StartTime(r.pid) != r.start {
				gone[r] = true
				continue
			}
			for _, p := range Tree(r.pid) {
				sum += p.RSS
				cpu[p.PID] = p.CPU
				runnable = runnable || p.runnable
				k := root{pid: p.PID, start: p.start}
				known = append(known, k)
				found[k] = true
				if k == r {
					live = append(live, r)
				}
				if e := w.exits[k]; e != nil {
					e.rss = p.RSS
				} else if w.exits != nil {
					w.exits[k] = &exitWatch{fd: openExit(p.PID, p.start), rss: p.RSS}
				}
			}
		}
		w.settleExits(found)
	} else {
		for _, k := range known {
			if st, ok := readStat(k.pid); ok && st.start == k.start {
				sum += st.rss
				cpu[k.pid] = st.cpu
				runnable = runnable || st.runnable
				if slices.Contains(roots, k) {
					live = append(live, k)
				}
			}
		}
	}
	now := time.Now()
	w.mu.Lock()
	if whole {
		w.roots = slices.DeleteFunc(w.roots, func(r root) bool { return gone[r] })
		w.known = known
	}
	w.current = sum
	w.peak = max(w.peak, sum)
	f := w.onSample
	w.marks = append(w.marks, cpuMark{at: now, cpu: cpu, roots: live})
	base := -1
	for k := len(w.marks) - 2; k >= 0; k-- {
		if now.Sub(w.marks[k].at) >= minSpan {
			base = k
			break
		}
	}
	// Only a span every running root ran through is measured: over a
	// span that began before a root started, its first moments (no
	// clock tick charged yet) would read as a whole span idle, and a
	// span with no root running measures no process at all. Either
	// would tell a scheduler that a unit whose process is starting, or
	// about to start, waits on its cloud.
	measured := false
	if base >= 0 {
		w.marks = w.marks[base:] // an older mark is never the newest minSpan old again
		b := w.marks[0]
		measured = len(live) > 0
		for _, r := range live {
			measured = measured && slices.Contains(b.roots, r)
		}
		if measured {
			var used time.Duration
			for pid, c := range cpu {
				prev, seen := b.cpu[pid]
				if !seen || prev > c { // new since, or its PID reused: all of it is new
					prev = 0
				}
				used += c - prev
			}
			w.cores = used.Seconds() / now.Sub(b.at).Seconds()
			w.measured = true
		}
	}
	cores := w.cores
	w.mu.Unlock()
	if measured && f != nil {
		f(cores, whole, runnable)
	}
}

// settleExits learns how the processes that left the trees since the
// last walk ended (all of them when found is nil): one that SIGKILL
// ended is added to Killed. One the kernel cannot tell yet (its parent
// has not reaped it, or it left the tree alive) is asked again at the
// next walk, and for the last time by Stop. w.sampling is held.
func (w *Watch) settleExits(found map[root]bool) {
	for k, e := range w.exits {
		if found[k] {
			continue
		}
		if e.fd < 0 {
			delete(w.exits, k)
			continue
		}
		killed, ended := exitKilled(e.fd)
		if !ended && found != nil {
			continue
		}
		if killed {
			w.mu.Lock()
			w.killed = append(w.killed, Proc{PID: k.pid, RSS: e.rss, start: k.start})
			w.mu.Unlock()
		}
		closeExit(e.fd)
		delete(w.exits, k)
	}
}

// Killed lists the processes of the trees that a SIGKILL ended, each
// with its resident memory when a walk last read it: the kernel's OOM
// killer's victims among them. Only a process a walk found is known (one
// that started and ended between two walks is not), and only where the
// kernel tells a process that is not the parent how another ended
// (Linux 6.15 and later: PIDFD_INFO_EXIT); elsewhere it stays empty. It
// is complete once Stop returned.
func (w *Watch) Killed() []Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.killed)
}

// Cores is how many cores the trees used between the last two samples
// (CPU time over wall time), and false before there were two.
func (w *Watch) Cores() (float64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cores, w.measured
}

// Current is the sum of the last sample.
func (w *Watch) Current() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Peak is the highest sum sampled so far.
func (w *Watch) Peak() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// Stop ends the sampling and waits for its goroutine; the peak and
// Killed stay readable. Stop may be called more than once.
func (w *Watch) Stop() {
	w.mu.Lock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
	// The processes still watched: how those that ended did, the last
	// time; the pidfds are closed.
	w.sampling.Lock()
	w.settleExits(nil)
	w.exits = nil
	w.sampling.Unlock()
}
