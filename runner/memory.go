package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
	"github.com/tfisolate/tfisolate/internal/retry"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// NoMemoryBudget, given to WithMemoryBudget, turns the memory budget off:
// only the parallelism bounds how many units run at once. Each unit's
// peak memory is still measured and reported.
const NoMemoryBudget int64 = -1

// memoryOptions are what WithMemoryBudget sets.
type memoryOptions struct {
	budget int64 // > 0: bytes; NoMemoryBudget: off; 0: read from the machine
}

// memoryFile is the record of the peak memory each component used, per
// engine and command class (memClassOf), beside the workdirs (in the
// workdir root, 0600), so the next Run admits units by what they used
// before.
const memoryFile = ".memory.json"

// memoryRecord is memoryFile's content. Version 2 records a class with
// each peak; a version 1 record (written before classes existed) is
// read as peaks of an unknown class (Class ""), which are kept as they
// are: nothing measures that class, so nothing lowers them, and they
// count only where a class of the component has no peak of its own
// (see memGate.expected).
type memoryRecord struct {
	Version int          `json:"version"`
	Peaks   []memoryPeak `json:"peaks"`
}

// memoryVersion is the version save writes; load reads it and 1.
const memoryVersion = 2

type memoryPeak struct {
	Engine string `json:"engine"` // terraform or tofu
	Source string `json:"source"` // the component's source dir
	// Class is the command class (memClassOf) the peak was measured in;
	// "" in a version 1 record: unknown.
	Class   string    `json:"class,omitempty"`
	Bytes   int64     `json:"bytes"`
	Updated time.Time `json:"updated"`
}

// The command classes the record keeps apart: commands that use
// memory alike. A read starts no provider or only loads schemas
// (Init, Validate, Output, and the commands that run no plan:
// ForceUnlock, PushErroredState, ExportPlan, ImportPlan); a plan
// configures providers and reads every resource (Plan, SavePlan and
// the destroy-plan forms); an apply also changes them (Apply, ApplyPlan,
// Destroy). A custom step is a class of its own, by name
// (memClassStepPrefix + name): the runner cannot know what it runs.
const (
	memClassRead       = "read"
	memClassPlan       = "plan"
	memClassApply      = "apply"
	memClassStepPrefix = "step:"
)

// memClassOf is the memory class of cmd.
func memClassOf(cmd Command) string {
	switch cmd.kind {
	case kindPlan, kindSavePlan:
		return memClassPlan
	case kindApply, kindApplyPlan, kindDestroy:
		return memClassApply
	case kindStep:
		return memClassStepPrefix + cmd.name
	}
	return memClassRead
}

// nextMark is the peak a class keeps after a Run that measured it: a
// decaying high-water mark, lowered only by measurement and gradually.
// old is the recorded peak, peak the highest peak a unit of the class
// reached in the Run (failed attempts included), okPeak the highest of
// the units that succeeded (0: none did). A peak at or above old
// replaces it at once. Below it, only a Run whose units succeeded
// lowers it, by a quarter of the way down to okPeak (never below
// peak): a unit killed or failed early measured less than it needs, so
// it never lowers the mark, and one light Run forgets at most a quarter
// of what a heavy one taught (the gap to a steady lighter peak is under
// half after three such Runs, a tenth after eight).
func nextMark(old, peak, okPeak int64) int64 {
	if peak >= old {
		return peak
	}
	if okPeak <= 0 {
		return old
	}
	return max(peak, old-(old-okPeak)/4)
}

// memGate is one Run's memory budget: it admits units (the queue's
// Admit hook), watches the process tree of each running unit, learns
// each component's peak, and tells an out-of-memory kill from another
// failure.
//
// Admission: a unit is admitted when the running units' use plus its
// expected peak fits in the budget. A running unit counts as the larger
// of its expected peak and the peak sampled so far (its peak may come
// later in its run, and a unit that outgrows its estimate counts as it
// is). The expected peak of a unit is its component's peak (per engine)
// in the Run's command class (memClassOf): the recorded high-water mark
// (nextMark), raised by what this Run measured; a class with no peak of
// its own takes the component's heaviest known (an older record's peak
// of unknown class included), so a first Apply after Output Runs is
// admitted at the plan's or an old apply's size, not output's. The
// unit's ExpectedMemory raises it, never lowers it. A component never
// measured (and not hinted) runs one unit first, counted at what it
// uses as it runs, counted as unmeasuredPeak; when the budget is tight
// (it cannot hold the parallelism's worth of such units) its other
// units wait for that unit's peak.
type memGate struct {
	rs     *runState
	budget int64 // 0: off (units are measured, never held back)
	path   string
	// oomKills reads the count of the kernel's OOM kills where this Run's
	// process is (its cgroup found once).
	oomKills func() (int64, bool)

	class string // the Run's command class (memClassOf)

	mu sync.Mutex
	// learned holds, by component key (memKey), each class's peak: the
	// record's, raised by this Run's measurements (lowered only by save).
	learned map[string]map[string]int64
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
	watch  *memory.Watch // nil until the unit's goroutine starts it
	// ours are the PIDs the runner itself killed (leftovers, reapUnit):
	// a SIGKILL of the runner's is no victim of the kernel's.
	ours map[int]bool
}

func (rs *runState) newMemGate() *memGate {
	m := &memGate{rs: rs, class: memClassOf(rs.cmd), learned: map[string]map[string]int64{}, seen: map[string]int64{},
		seenOK: map[string]int64{}, probing: map[string]bool{},
		running: map[int]*memUnit{}, waiting: map[int]time.Time{}, waited: map[int]time.Duration{}, changed: make(chan struct{}),
		oomKills: memory.OOMCounter()}
	log := rs.cfg.logger
	switch b := rs.cfg.memory.budget; {
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
			log.Log(context.Background(), level, "no memory budget: cannot read the machine's memory", "err", err)
			break
		}
		m.budget = mc.Budget()
		log.Debug("memory budget", "bytes", m.budget, "from", mc.From())
	}
	if root := rs.cfg.workdirs.Root(); root != "" {
		m.path = filepath.Join(root, memoryFile)
		for _, p := range m.load() {
			if p.Engine == string(rs.eng.Kind) {
				m.learn(memKey(p.Engine, p.Source), p.Class, p.Bytes)
			}
		}
	}
	return m
}

// unmeasuredPeak is what a unit of a component never measured is expected
// to use until one of its units has run: terraform with a large provider
// (the AWS provider alone is a few hundred MB).
const unmeasuredPeak int64 = 512 << 20

func memKey(engine, source string) string { return engine + "\x00" + source }

// learn raises what key's class is known to need to at least b; m.mu
// is held (or m not yet shared).
func (m *memGate) learn(key, class string, b int64) {
	c := m.learned[key]
	if c == nil {
		c = map[string]int64{}
		m.learned[key] = c
	}
	c[class] = max(c[class], b)
}

// expected is what unit i (of component key) is expected to use in this
// Run's class, and whether anything is known of it (see memGate); m.mu
// is held.
func (m *memGate) expected(i int, key string) (int64, bool) {
	c := m.learned[key]
	v, known := c[m.class]
	if !known {
		// No peak of this class: the heaviest the component is known
		// to reach, whatever the class.
		for _, b := range c {
			v, known = max(v, b), true
		}
	}
	if h := m.rs.units[i].ExpectedMemory; h > 0 {
		v, known = max(v, h), true
	}
	if !known {
		v = unmeasuredPeak
	}
	return v, known
}

func (m *memGate) key(i int) string {
	src := m.rs.units[i].Workdir.Source
	if abs, err := filepath.Abs(src); err == nil {
		src = abs
	}
	return memKey(string(m.rs.eng.Kind), src)
}

// admit is the queue's Admit hook; see memGate.
func (m *memGate) admit(i, running int) bool {
	m.mu.Lock()
	key := m.key(i)
	expect, known := m.expected(i, key)
	// When the budget cannot hold the parallelism's worth of unmeasured
	// units, one unit of a component never measured runs first and the
	// others wait for its peak.
	tight := m.budget < int64(max(m.rs.opts.parallelism, 1))*unmeasuredPeak
	fits := m.used()+expect <= m.budget && m.retrying == 0 && (known || !tight || !m.probing[key])
	alone := len(m.running) == 0 && running == 0
	if !fits && !alone {
		_, was := m.waiting[i]
		if !was {
			m.waiting[i] = time.Now()
		}
		m.mu.Unlock()
		if !was {
			m.rs.em.emit(Event{Unit: m.rs.g.ID(i), Phase: PhaseMemoryWait, Status: Queued, Memory: expect})
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
	id := m.rs.g.ID(i)
	if expect > m.budget {
		m.rs.cfg.logger.Warn("unit expects more memory than the whole budget; it runs alone",
			"unit", id, "expected_bytes", expect, "budget_bytes", m.budget)
	}
	if was {
		m.rs.em.emit(Event{Unit: id, Phase: PhaseMemoryWait, Status: Queued, Memory: expect, MemoryWait: waited})
	}
	return true
}

// used is what the running units count for; m.mu is held.
func (m *memGate) used() int64 {
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
func (m *memGate) begin(i int) *memory.Watch {
	var w *memory.Watch
	if g := m.rs.cpu; g != nil {
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

// track adds a terraform process the unit started to its watch.
func (m *memGate) track(i, pid int) {
	m.mu.Lock()
	u := m.running[i]
	m.mu.Unlock()
	if u != nil && u.watch != nil {
		u.watch.Add(pid)
	}
}

// reaped records that the runner killed process pid of unit i itself.
func (m *memGate) reaped(i, pid int) {
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
// and the processes of its trees a SIGKILL not the runner's ended
// (memory.Watch.Killed).
func (m *memGate) end(i int, ok bool) (peak int64, others int, killed []memory.Proc) {
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
			// is lowered once, by save.
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
func (m *memGate) readmit(ctx context.Context, i, others int) bool {
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
func (m *memGate) waitedFor(i int) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waited[i]
}

// memUse is what the memory gate measured of one unit's run.
type memUse struct {
	peak        int64         // the highest resident memory over its attempts
	wait        time.Duration // waitedFor: how long it waited for memory in all
	retries     int           // attempts repeated after an OOM kill
	outOfMemory bool          // the kernel's OOM killer killed the last attempt
}

// run runs unit i (fn is one attempt) with its memory watched and
// returns what it measured. A kill by the kernel's OOM killer becomes
// ErrOutOfMemory, retried once (see RetryPolicy.NoOutOfMemoryRetry) when
// fewer units run.
func (m *memGate) run(ctx context.Context, i int, fn func(context.Context, int) error) (memUse, error) {
	var use memUse
	for attempt := 0; ; attempt++ {
		m.begin(i)
		kills, countable := m.oomKills()
		err := fn(ctx, i)
		p, others, victims := m.end(i, err == nil)
		use.peak = max(use.peak, p)
		if err == nil || !countable || ctx.Err() != nil || !m.oomKilled(i, err, kills, victims) {
			use.outOfMemory, use.wait = false, m.waitedFor(i)
			return use, err
		}
		use.outOfMemory = true
		err = &OutOfMemoryError{Unit: m.rs.g.ID(i), Peak: use.peak, Budget: m.budget, Err: err}
		if attempt > 0 || !m.retryable(err) || ctx.Err() != nil {
			use.wait = m.waitedFor(i)
			return use, err
		}
		id := m.rs.g.ID(i)
		m.rs.em.emit(Event{Unit: id, Phase: PhaseMemoryWait, Status: Running, Retry: 1, Err: err, Memory: use.peak})
		if !m.readmit(ctx, i, others) {
			use.wait = m.waitedFor(i)
			return use, err
		}
		use.retries++
	}
}

// retryable: the command may be run again after its terraform was killed
// for memory (see RetryPolicy.NoOutOfMemoryRetry).
func (m *memGate) retryable(err error) bool {
	if m.rs.cfg.retry.NoOutOfMemoryRetry {
		return false
	}
	switch m.rs.cmd.kind {
	case kindInit, kindPlan, kindSavePlan, kindValidate, kindOutput:
		return true
	case kindApply, kindDestroy:
		return !retry.MayHaveChanged(err)
	}
	return false
}

// pluginDiedRe matches what terraform and tofu say when a provider (or
// provisioner) plugin process ended under them: killed, its connection
// gone. A call in flight when the plugin is killed may also end as
// cancelled ("Request cancelled ... The plugin.(*GRPCProvider).X request
// was cancelled."), which is seen under memory pressure when the kernel
// kills a provider mid-call. A plugin killed while it starts, before
// go-plugin's handshake, fails the command with go-plugin's start-up
// errors instead (under "Failed to load plugin schemas" or "failed to
// instantiate provider"): its stdout closed with no handshake line
// ("Unrecognized remote plugin message", "Failed to read any lines from
// plugin's stdout") or it ended before terraform connected.
var pluginDiedRe = regexp.MustCompile(`(?i)plugin (did not respond|exited unexpectedly|crashed)|failed to respond to the plugin|rpc error: code = Unavailable|connection is shut down|error reading from server: EOF|plugin\S* request was cancelled|unrecognized remote plugin message|failed to read any lines from plugin's stdout|plugin exited before we could connect`)

// oomKilled tells a unit the kernel killed for memory. The kernel's
// OOM-kill count (of this process's memory cgroup, which the unit's
// processes share, else of the machine) must have risen while the unit
// ran, and its terraform failed; then the kill is the unit's when the
// victim was in its process trees:
//
//   - a process of its trees (a provider, a provisioner, terraform
//     itself) ended by a SIGKILL the runner did not send (victims:
//     memory.Watch.Killed, exact where the kernel tells, Linux 6.15 and
//     later, for every process a walk of the unit's trees found);
//   - or its terraform was ended by SIGKILL;
//   - or, for a victim no walk found (a provider killed as it started,
//     between two walks) or a kernel that does not tell, terraform said
//     that a plugin died under it or failed to start (pluginDiedRe).
//
// The count alone is not enough: it may be another unit's kill, and a
// SIGKILL alone may be anyone's. A unit whose context ended was
// interrupted (a Stop's kill is a SIGKILL too) and is never taken for
// one (memGate.run). What remains inexact: the count says how many, not
// when, so a SIGKILL terraform itself sends a plugin that would not
// stop (go-plugin's, two seconds after asking) in the same unit run as
// an OOM kill elsewhere is taken for one, as is, where the victim is
// known only by terraform's message, a plugin of another unit that
// failed to start in the same moment.
func (m *memGate) oomKilled(i int, err error, before int64, victims []memory.Proc) bool {
	var te *tfcmd.Error
	if !errors.As(err, &te) {
		return false
	}
	after, ok := m.oomKills()
	if !ok || after <= before {
		return false
	}
	log := m.rs.cfg.logger
	if len(victims) > 0 {
		for _, v := range victims {
			log.Debug("the kernel killed a process of the unit for memory", "unit", m.rs.g.ID(i), "pid", v.PID, "resident_bytes", v.RSS)
		}
		return true
	}
	var ee *exec.ExitError
	if errors.As(te.Err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			log.Debug("the kernel killed the unit's terraform for memory", "unit", m.rs.g.ID(i))
			return true
		}
	}
	// As the engine printed it or unwrapped (see tfcmd.Unwrapped).
	if pluginDiedRe.MatchString(te.Stderr) || pluginDiedRe.MatchString(strings.Join(strings.Fields(te.Stderr), " ")) {
		log.Debug("the kernel killed a plugin of the unit for memory, as terraform's error says", "unit", m.rs.g.ID(i))
		return true
	}
	return false
}

// save records the peaks measured in this Run in its class, over what
// the record held: each (engine, component, class) peak becomes
// nextMark of the recorded one and this Run's; other classes, engines
// and components, and an older record's peaks of unknown class, are
// kept as they are.
func (m *memGate) save() {
	m.mu.Lock()
	seen, seenOK := maps.Clone(m.seen), maps.Clone(m.seenOK)
	m.mu.Unlock()
	if m.path == "" || len(seen) == 0 {
		return
	}
	now := time.Now().UTC()
	peaks := m.load() // another process may have written since this Run began
	for i := range peaks {
		k := memKey(peaks[i].Engine, peaks[i].Source)
		if v, ok := seen[k]; ok && peaks[i].Class == m.class {
			peaks[i].Bytes, peaks[i].Updated = nextMark(peaks[i].Bytes, v, seenOK[k]), now
			delete(seen, k)
		}
	}
	eng := string(m.rs.eng.Kind)
	for k, v := range seen {
		peaks = append(peaks, memoryPeak{Engine: eng, Source: k[len(eng)+1:], Class: m.class, Bytes: v, Updated: now})
	}
	slices.SortFunc(peaks, func(a, b memoryPeak) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Class, b.Class))
	})
	b, err := json.MarshalIndent(memoryRecord{Version: memoryVersion, Peaks: peaks}, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(m.path, append(b, '\n'), 0o600, atomicfile.NoSync())
	}
	if err != nil {
		m.rs.cfg.logger.Warn("cannot record the units' peak memory", "file", m.path, "err", err)
	}
}

// load reads the record; one someone else wrote (or could have) is not
// believed (DESIGN invariant 12): it only steers scheduling, so it is
// ignored with a warning, never an error.
func (m *memGate) load() []memoryPeak {
	fi, err := os.Lstat(m.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	log := m.rs.cfg.logger
	if err != nil {
		log.Warn("cannot read the units' peak memory", "file", m.path, "err", err)
		return nil
	}
	uid, _, owned := pathtrust.Owner(fi)
	euid := pathtrust.Geteuid()
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 || (owned && uid != euid && uid != 0) {
		log.Warn("ignoring the units' peak memory: not a private file of this user", "file", m.path, "mode", fi.Mode().String())
		return nil
	}
	b, err := os.ReadFile(m.path)
	if err != nil {
		log.Warn("cannot read the units' peak memory", "file", m.path, "err", err)
		return nil
	}
	var rec memoryRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Version < 1 || rec.Version > memoryVersion {
		log.Warn("ignoring the units' peak memory: not a record of this version", "file", m.path)
		return nil
	}
	if rec.Version == 1 {
		for i := range rec.Peaks {
			rec.Peaks[i].Class = "" // unknown: see memoryRecord
		}
	}
	return slices.DeleteFunc(rec.Peaks, func(p memoryPeak) bool { return p.Bytes <= 0 || p.Source == "" })
}

// OutOfMemoryError is the error of a unit whose terraform or provider
// the kernel's OOM killer killed. It wraps ErrOutOfMemory and the
// failure terraform reported.
type OutOfMemoryError struct {
	Unit   string
	Peak   int64 // the unit's sampled peak, bytes
	Budget int64 // the Run's memory budget, bytes (0: none)
	Err    error
}

func (e *OutOfMemoryError) Error() string {
	budget := "no memory budget"
	if e.Budget > 0 {
		budget = fmt.Sprintf("budget %d MiB", e.Budget>>20)
	}
	return fmt.Sprintf("%v: the kernel killed a process of unit %s for memory (the unit's peak %d MiB, %s): %v",
		ErrOutOfMemory, e.Unit, e.Peak>>20, budget, e.Err)
}

// Unwrap returns ErrOutOfMemory and terraform's failure.
func (e *OutOfMemoryError) Unwrap() []error { return []error{ErrOutOfMemory, e.Err} }
