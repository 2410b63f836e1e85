package memory

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

var pageSize = int64(os.Getpagesize())

// Proc is one process of a tree and its resident memory.
type Proc struct {
	PID int
	RSS int64 // bytes
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
		rss, ok := residentOf(p)
		if !ok {
			continue
		}
		out = append(out, Proc{PID: p, RSS: rss})
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

// residentOf reads pid's resident set size; false when it is gone.
func residentOf(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n * pageSize, true
}

// children lists pid's children, from each of its threads.
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return n
}

// DefaultInterval is how often a Watch samples unless told otherwise: a
// sample reads a few small files per process and thread of the trees,
// and a peak shorter than the interval can be missed.
const DefaultInterval = 100 * time.Millisecond

// Watch samples the process trees of its roots while they run.
type Watch struct {
	sampling sync.Mutex // one Sample at a time; mu is not held while /proc is read
	mu       sync.Mutex
	roots    []root
	current  int64
	peak     int64

	stop chan struct{}
	done chan struct{}
}

type root struct {
	pid   int
	start uint64
}

// NewWatch starts sampling every interval (DefaultInterval when <= 0);
// Stop ends it.
func NewWatch(interval time.Duration) *Watch {
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &Watch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.Sample()
			}
		}
	}()
	return w
}

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
func (w *Watch) Sample() {
	w.sampling.Lock()
	defer w.sampling.Unlock()
	w.mu.Lock()
	roots := slices.Clone(w.roots)
	w.mu.Unlock()
	var sum int64
	gone := map[root]bool{}
	for _, r := range roots {
		if StartTime(r.pid) != r.start {
			gone[r] = true
			continue
		}
		sum += Sum(Tree(r.pid))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roots = slices.DeleteFunc(w.roots, func(r root) bool { return gone[r] })
	w.current = sum
	w.peak = max(w.peak, sum)
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

// Stop ends the sampling and waits for its goroutine; the peak stays
// readable. Stop may be called more than once.
func (w *Watch) Stop() {
	w.mu.Lock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
}
