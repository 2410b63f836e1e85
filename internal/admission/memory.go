package admission

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/memory"
)

// UnmeasuredPeak is what a unit of a component never measured is
// expected to use until one of its units has run: terraform with a
// large provider (the AWS provider alone is a few hundred MB).
const UnmeasuredPeak int64 = 512 << 20

// A Unit is what the memory gate knows of a unit of the Run; units are
// named by their index in MemoryConfig.Units.
type Unit struct {
	ID     string // for the log
	Source string // the component's source dir: the record's key, with the engine and the class
	// Expected is the caller's hint of the unit's peak, bytes: it
	// raises what the record says, never lowers it (0: none).
	Expected int64
}

// A Wait reports a unit's wait at a gate: as it begins (Waited 0) and,
// for the memory gate's admission and the core gate, as it ends.
type Wait struct {
	Unit int // the unit's index
	// Memory is, at the memory gate, what the unit is expected to use,
	// or, when it waits to run again after an out-of-memory kill, the
	// peak it reached.
	Memory int64
	Waited time.Duration // 0 as the wait begins; how long it waited, as it ends
	// OutOfMemory is the failure of the unit's attempt the kernel killed
	// for memory, when the unit waits to run again after it; else nil.
	OutOfMemory error
}

// MemoryConfig is what a Run's memory gate is made of.
type MemoryConfig struct {
	// Budget is the memory the running units may use together: > 0,
	// bytes; 0, the machine's (memory.Read's Budget; none where it cannot
	// be read); < 0, none (units are measured, never held back).
	Budget int64
	// Record is the file of the peaks the units' components measured
	// before; "" for none.
	Record string
	Engine string // the Run's engine kind (terraform, tofu): the record's key
	Class  Class  // the Run's command class: the record's key
	// Parallelism is how many units the Run runs at most at once.
	Parallelism int
	Units       []Unit // the Run's units, by index
	// Cores, if not nil, is the Run's core gate: the memory gate's
	// samples of each unit's processes feed it.
	Cores *Cores
	// Retryable says whether a unit whose attempt failed with err,
	// killed by the kernel for memory, may run again (once); nil: never.
	Retryable func(err error) bool
	OnWait    func(Wait)   // the units' waits for memory; nil: not reported
	Logger    *slog.Logger // nil: silent
}

// Memory is one Run's memory gate: it admits units (the queue's Admit
// hook), watches the process tree of each running unit, learns each
// component's peak, and tells an out-of-memory kill from another
// failure.
//
// Admission: a unit is admitted when the running units' use plus its
// expected peak fits in the budget. A running unit counts as the larger
// of its expected peak and the peak sampled so far (its peak may come
// later in its run, and a unit that outgrows its estimate counts as it
// is). The expected peak of a unit is its component's peak (per engine)
// in the Run's command class: the recorded high-water mark (nextMark),
// raised by what this Run measured; a class with no peak of its own
// takes the component's heaviest known (an older record's peak of
// unknown class included), so a first apply after output Runs is
// admitted at the plan's or an old apply's size, not output's. The
// unit's Expected raises it, never lowers it. A component never
// measured (and not hinted) runs one unit first, counted at what it
// uses as it runs, counted as UnmeasuredPeak; when the budget is tight
// (it cannot hold the parallelism's worth of such units) its other
// units wait for that unit's peak.
type Memory struct {
	budget      int64 // 0: off (units are measured, never held back)
	path        string
	newer       error // the record is a newer release's: read as none, never written
	engine      string
	class       Class
	parallelism int
	units       []Unit
	cores       *Cores
	retryable   func(error) bool
	onWait      func(Wait)
	log         *slog.Logger
	// oomKills reads the count of the kernel's OOM kills where this Run's
	// process is (its cgroup found once).
	oomKills func() (int64, bool)

	mu sync.Mutex
	// learned holds, by component key (memKey), each class's peak: the
	// record's, raised by this Run's measurements (lowered only by Save).
	learned map[string]map[Class]int64
	seen    map[string]int64 // key -> the highest peak measured in this Run (this Run's class)
	seenOK  map[string]int64 // key -> the same, of the units that succeeded
	probing map[string]bool  // keys with a never-measured unit running
	running map[int]*memUnit
	waiting map[int]time.Time // units held back, since when
	waited  map[int]time.Duration
	// retrying counts units waiting to run again after an OOM kill: no
	// new unit is admitted before them.
	retrying int
	changed  chan struct{} // closed (and replaced) when a unit releases its memory
}

type memUnit struct {
	key    string
	expect int64
	probe  bool          // admitted before its component was measured
	watch  *memory.Watch // nil until the unit's attempt starts it
	// ours are the PIDs the runner itself killed (Reaped): a SIGKILL of
	// the runner's is no victim of the kernel's.
	ours map[int]bool
}

// NewMemory is the memory gate c describes, with the record's peaks of
// c.Engine loaded.
func NewMemory(c MemoryConfig) *Memory {
	m := &Memory{path: c.Record, engine: c.Engine, class: c.Class, parallelism: c.Parallelism, units: c.Units,
		cores: c.Cores, retryable: c.Retryable, onWait: c.OnWait, log: c.Logger,
		learned: map[string]map[Class]int64{}, seen: map[string]int64{}, seenOK: map[string]int64{}, probing: map[string]bool{},
		running: map[int]*memUnit{}, waiting: map[int]time.Time{}, waited: map[int]time.Duration{}, changed: make(chan struct{}),
		oomKills: memory.OOMCounter()}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.retryable == nil {
		m.retryable = func(error) bool { return false }
	}
	if m.onWait == nil {
		m.onWait = func(Wait) {}
	}
	switch b := c.Budget; {
	case b > 0:
		m.budget = b
	case b == 0:
		mc, err := memory.Read()
		if err != nil {
			// Expected where there is no /proc (only Linux has a budget by default).
			level := slog.LevelDebug
			if runtime.GOOS == "linux" {
				level = slog.LevelWarn
			}
			m.log.Log(context.Background(), level, "no memory budget: cannot read the machine's memory", "err", err)
			break
		}
		m.budget = mc.Budget()
		m.log.Debug("memory budget", "bytes", m.budget, "from", mc.From())
	}
	if m.path != "" {
		var peaks []peak
		peaks, m.newer = loadRecord(m.path, m.log)
		for _, p := range peaks {
			if p.Engine == m.engine {
				m.learn(memKey(p.Engine, p.Source), p.Class, p.Bytes)
			}
		}
	}
	return m
}

// Newer is the *format.NewerError of a record a newer release wrote,
// nil when there is none: the Run goes on without it, and Save leaves
// it as it is.
func (m *Memory) Newer() error { return m.newer }

// Budget is the memory the running units may use together, bytes; 0:
// none (Admit then need not be called).
func (m *Memory) Budget() int64 { return m.budget }

// learn raises what key's class is known to need to at least b; m.mu
// is held (or m not yet shared).
func (m *Memory) learn(key string, class Class, b int64) {
	c := m.learned[key]
	if c == nil {
		c = map[Class]int64{}
		m.learned[key] = c
	}
	c[class] = max(c[class], b)
}

// expected is what unit i (of component key) is expected to use in this
// Run's class, and whether anything is known of it (see Memory); m.mu
// is held.
func (m *Memory) expected(i int, key string) (int64, bool) {
	c := m.learned[key]
	v, known := c[m.class]
	if !known {
		// No peak of this class: the heaviest the component is known
		// to reach, whatever the class.
		for _, b := range c {
			v, known = max(v, b), true
		}
	}
	if h := m.units[i].Expected; h > 0 {
		v, known = max(v, h), true
	}
	if !known {
		v = UnmeasuredPeak
	}
	return v, known
}

func (m *Memory) key(i int) string {
	src := m.units[i].Source
	if abs, err := filepath.Abs(src); err == nil {
		src = abs
	}
	return memKey(m.engine, src)
}

// Admit is the queue's Admit hook (see Memory): whether unit i may
// start while running units run. A unit held back is reported to OnWait
// as its wait begins, and again when it is admitted.
func (m *Memory) Admit(i, running int) bool {
	m.mu.Lock()
	key := m.key(i)
	expect, known := m.expected(i, key)
	// When the budget cannot hold the parallelism's worth of unmeasured
	// units, one unit of a component never measured runs first and the
	// others wait for its peak.
	tight := m.budget < int64(max(m.parallelism, 1))*UnmeasuredPeak
	fits := m.used()+expect <= m.budget && m.retrying == 0 && (known || !tight || !m.probing[key])
	alone := len(m.running) == 0 && running == 0
	if !fits && !alone {
		_, was := m.waiting[i]
		if !was {
			m.waiting[i] = time.Now()
		}
		m.mu.Unlock()
		if !was {
			m.onWait(Wait{Unit: i, Memory: expect})
		}
		return false
	}
	m.running[i] = &memUnit{key: key, expect: expect, probe: !known}
	if !known {
		m.probing[key] = true
	}
	var waited time.Duration
	since, was := m.waiting[i]
	if was {
		waited = time.Since(since)
		m.waited[i] += waited
		delete(m.waiting, i)
	}
	m.mu.Unlock()
	if expect > m.budget {
		m.log.Warn("unit expects more memory than the whole budget; it runs alone",
			"unit", m.units[i].ID, "expected_bytes", expect, "budget_bytes", m.budget)
	}
	if was {
		m.onWait(Wait{Unit: i, Memory: expect, Waited: waited})
	}
	return true
}

// used is what the running units count for; m.mu is held.
func (m *Memory) used() int64 {
	var n int64
	for _, u := range m.running {
		c := u.expect
		if u.watch != nil {
			c = max(c, u.watch.Peak())
		}
		n += c
	}
	return n
}

// defaultWalkEvery is how many of a unit's memory samples, every
// memory.DefaultInterval, are one walk of its process trees in a Run
// without a memory budget or core gate: the others read only the
// processes the last walk found.
const defaultWalkEvery = 3

// begin starts watching unit i (admitted, or run without a budget).
func (m *Memory) begin(i int) *memory.Watch {
	var w *memory.Watch
	if g := m.cores; g != nil {
		w = memory.NewWatch(memory.DefaultInterval, gateSampleEvery)
		w.OnSample(func(cores float64, whole, runnable bool) { g.measured(i, cores, whole, runnable) })
		g.watch(i, w)
	} else if m.budget > 0 {
		w = memory.NewWatch(memory.DefaultInterval, 0)
	} else {
		// No budget to keep: each unit's peak is measured for its Result
		// and learned for later Runs, so a walk every third sample finds
		// its providers, at a third of the cost of /proc reads.
		w = memory.NewWatchWalking(memory.DefaultInterval, defaultWalkEvery, 0)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.running[i]
	if u == nil {
		u = &memUnit{key: m.key(i)}
		m.running[i] = u
	}
	u.watch = w
	return w
}

// Track adds pid, a process unit i started (its terraform), to the
// unit's watch: its tree is sampled from then on.
func (m *Memory) Track(i, pid int) {
	m.mu.Lock()
	u := m.running[i]
	m.mu.Unlock()
	if u != nil && u.watch != nil {
		u.watch.Add(pid)
	}
}

// Reaped records that the caller killed process pid of unit i itself
// (SIGKILL): that death is not the kernel's out-of-memory kill.
func (m *Memory) Reaped(i, pid int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.running[i]; u != nil {
		if u.ours == nil {
			u.ours = map[int]bool{}
		}
		u.ours[pid] = true
	}
}

// end stops watching unit i, learns its peak (ok: the attempt
// succeeded, so its peak may lower the record; see nextMark) and
// releases its memory. It returns the peak, how many units ran with it,
// and the processes of its trees a SIGKILL not the caller's ended
// (memory.Watch.Killed).
func (m *Memory) end(i int, ok bool) (peak int64, others int, killed []memory.Proc) {
	m.mu.Lock()
	u := m.running[i]
	m.mu.Unlock()
	if u != nil && u.watch != nil {
		u.watch.Stop()
		peak = u.watch.Peak()
		m.mu.Lock()
		killed = slices.DeleteFunc(u.watch.Killed(), func(p memory.Proc) bool { return u.ours[p.PID] })
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, i)
	others = len(m.running)
	if u != nil {
		if u.probe {
			delete(m.probing, u.key)
		}
		if peak > 0 {
			m.seen[u.key] = max(m.seen[u.key], peak)
			if ok {
				m.seenOK[u.key] = max(m.seenOK[u.key], peak)
			}
			// Within the Run a measurement only raises: the record
			// is lowered once, by Save.
			m.learn(u.key, m.class, peak)
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return peak, others, killed
}

// readmit waits, for the retry of a unit killed for memory while others
// other units ran, until fewer than others run and the unit fits (or
// nothing runs), then admits it: with it, fewer units run than when it
// was killed. It waits only while other units run; false when ctx ended
// first.
func (m *Memory) readmit(ctx context.Context, i, others int) bool {
	start := time.Now()
	m.mu.Lock()
	m.retrying++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.retrying--
		m.mu.Unlock()
	}()
	for {
		m.mu.Lock()
		key := m.key(i)
		expect, _ := m.expected(i, key)
		n := len(m.running)
		ok := n == 0 || (n < others && (m.budget == 0 || m.used()+expect <= m.budget))
		ch := m.changed
		if ok {
			m.running[i] = &memUnit{key: key, expect: expect}
			m.waited[i] += time.Since(start)
		}
		m.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// waitedFor is how long unit i waited for memory in all.
func (m *Memory) waitedFor(i int) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waited[i]
}

// Use is what the memory gate measured of one unit's run.
type Use struct {
	Peak    int64         // the highest resident memory over its attempts, bytes
	Wait    time.Duration // how long it waited for memory in all
	Retries int           // attempts repeated after an out-of-memory kill
	// OutOfMemory: the kernel's OOM killer killed the last attempt, whose
	// failure Run returned.
	OutOfMemory bool
}

// Run runs unit i, admitted (or run without a budget), with its memory
// watched: attempt runs the unit once and hands each process it starts
// to Track. Run returns what it measured and the last attempt's error.
// An attempt the kernel killed for memory (see oomKilled) sets
// Use.OutOfMemory; it runs again once, when Retryable says so, after it
// is reported to OnWait, and when fewer units run (readmit).
func (m *Memory) Run(ctx context.Context, i int, attempt func(context.Context, int) error) (Use, error) {
	var use Use
	for try := 0; ; try++ {
		m.begin(i)
		kills, countable := m.oomKills()
		err := attempt(ctx, i)
		p, others, victims := m.end(i, err == nil)
		use.Peak = max(use.Peak, p)
		if err == nil || !countable || ctx.Err() != nil || !m.oomKilled(i, err, kills, victims) {
			use.OutOfMemory, use.Wait = false, m.waitedFor(i)
			return use, err
		}
		use.OutOfMemory = true
		if try > 0 || !m.retryable(err) || ctx.Err() != nil {
			use.Wait = m.waitedFor(i)
			return use, err
		}
		m.onWait(Wait{Unit: i, Memory: use.Peak, OutOfMemory: err})
		if !m.readmit(ctx, i, others) {
			use.Wait = m.waitedFor(i)
			return use, err
		}
		use.Retries++
	}
}
