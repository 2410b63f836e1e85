//go:build linux

package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/workdir"
)

// The soak's knobs, from the environment (see bench/SOAK.md).
const (
	soakSeedEnv     = "TFISOLATE_SOAK_SEED"     // uint64; default: from the clock, always logged
	soakDurationEnv = "TFISOLATE_SOAK_DURATION" // how long faults are injected; default soakDefaultDuration
	soakHostsEnv    = "TFISOLATE_SOAK_HOSTS"    // host processes at once; default 3
	soakEnginesEnv  = "TFISOLATE_SOAK_ENGINES"  // comma-separated engine kinds; default "terraform,tofu"
)

const (
	soakDefaultDuration = time.Minute
	soakInstances       = 12
	soakParallelism     = 2
	// soakLatency is each create's provisioner sleep: the slow part of
	// every apply, between two of its state writes.
	soakLatency = time.Second
	// soakDownload is how long the throttled mirror takes to serve the
	// provider package, so that the first faults land mid-download.
	soakDownload = 5 * time.Second
	// soakBound bounds every wait for something the SDK must finish
	// (a killed host's engine, an instance lock, a host's last Run).
	soakBound = 3 * time.Minute
)

// Faults: where they are aimed, what is hit and with which signal, drawn
// with these weights.
var (
	soakModes   = []weighted[string]{{"state-write", 65}, {"random", 35}}
	soakKinds   = []weighted[string]{{"host", 40}, {"engine", 35}, {"provider", 25}}
	soakSignals = []weighted[syscall.Signal]{{syscall.SIGKILL, 50}, {syscall.SIGTERM, 25}, {syscall.SIGINT, 25}}
)

type weighted[T any] struct {
	v T
	w int
}

func pick[T any](rng *rand.Rand, ws []weighted[T]) T {
	total := 0
	for _, w := range ws {
		total += w.w
	}
	n := rng.IntN(total)
	for _, w := range ws {
		if n < w.w {
			return w.v
		}
		n -= w.w
	}
	panic("unreachable")
}

// TestSoak is the fault-injection soak (issue 27 item 5). Several host
// processes (the test binary re-executed as soakHost: runner, workdir and
// pluginc, as an operator's tool uses them) apply overlapping subsets of
// twelve instances over and over, under terraform and OpenTofu at once,
// sharing one workdir root and one provider cache that starts empty and is
// fed by a throttled loopback registry. Meanwhile hosts, engines and
// provider plugins are sent SIGKILL, SIGTERM and SIGINT at random moments,
// most of them right after an engine starts writing an instance's state
// (seen by inotify): the end of an apply's steps, where the state is
// written. Every choice comes from one seed, logged first and in every
// failure; TFISOLATE_SOAK_SEED replays it.
//
// After every fault, once the target and what it took down have ended
// (an interrupted engine finishes first), each instance it touched is
// checked under its instance lock: its state never changes lineage, its
// serial never goes down, a resource once recorded untainted keeps its id
// and stays (created once, never twice), and an empty or cut-off state
// appears only after its engine itself was SIGKILLed (terraform alone
// does that) and is then refused by every run, never planned over; every
// provider cache entry hashes to the published package. Unit failures are
// allowed only where a fault hit, or as the refusal of such a damaged
// state. At the end, once the damaged states are recovered as the error
// says (the backup put back), a final clean Run with a short state-lock
// timeout applies every instance, meeting no lock; then no instance or
// package lock is held, no process is left, the hosts' TMPDIR is empty
// and the cache holds no temp file.
//
// The short form (one minute of faults) runs with the other stress tests;
// TFISOLATE_SOAK_DURATION sets the long form. Skipped under -short.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("fault-injection soak; skipped under -short")
	}
	s := newSoak(t)
	s.run()
}

// soak is one soak on disk and its bookkeeping.
type soak struct {
	t                        *testing.T
	seed                     uint64
	duration                 time.Duration
	hostCount                int
	dir, root, cache, source string
	tmp, logs, caFile        string
	prov                     *demo.Provider
	engines                  map[string]string // kind -> binary
	engineExes               map[string]bool   // resolved engine binaries
	instEngine               map[int]string    // instance -> engine kind
	wantH1                   map[string]string // version -> h1: of the served package
	rng                      *rand.Rand        // the fault injector's
	writes                   *stateWrites
	insts                    map[int]*instTrack

	mu         sync.Mutex        // guards what follows, the instTracks and the stats hosts and the checker share
	live       map[int]*soakHost // running hosts by pid
	seen       map[int]pinfo     // every process seen under a host, by pid
	violations []string
	stats      soakStats
	launches   int

	stopLaunch chan struct{}
	slots      sync.WaitGroup
	monitor    sync.WaitGroup
	stopMon    chan struct{}
	faultLog   []string
	jobs       chan settleJob // to the checker; closed once by stopChecker
	jobsClosed bool
	checking   sync.WaitGroup
}

type soakStats struct {
	faults         map[string]int // "kind SIGNAL"
	modes          map[string]int
	noVictim       int
	units          map[string]int // status or status/kind
	damaged        int            // empty or cut-off states found after an engine SIGKILL
	refused        int            // units that refused such a state
	recovered      int
	crashedFound   int // units that found a crashed run of their instance
	crashedWaits   int
	hostsSignalled int
	hostsCompleted int
	checks         int
	interrupted    int // engines of signalled hosts, each seen to end
}

// instTrack is what the soak knows of one instance's state. Its fields
// other than id are guarded by soak.mu: the checker writes them, hosts'
// goroutines read them.
type instTrack struct {
	id       string // workdir.ID
	lineage  string // "" until a complete state is seen
	serial   uint64
	ids      map[string]string // address -> id of objects seen untainted
	damaged  bool              // found empty or cut off; not recovered yet
	engineKO bool              // its engine was SIGKILLed since its last complete state
	refusals int               // units that refused it while damaged
	// badAt is the last moment it may have been damaged: its engine's
	// SIGKILL, the damage seen, its recovery. A host that ran past it
	// may have refused it, and reports that only when it ends.
	badAt time.Time
}

func newSoak(t *testing.T) *soak {
	s := &soak{t: t, insts: map[int]*instTrack{}, instEngine: map[int]string{}, live: map[int]*soakHost{}, seen: map[int]pinfo{},
		stopLaunch: make(chan struct{}), stopMon: make(chan struct{}), jobs: make(chan settleJob, 1024),
		stats: soakStats{faults: map[string]int{}, modes: map[string]int{}, units: map[string]int{}}}
	s.seed = uint64(time.Now().UnixNano())
	if v := os.Getenv(soakSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "%s=%q: want an unsigned integer", soakSeedEnv, v)
		s.seed = n
	}
	t.Logf("soak seed %d (replay: %s=%d)", s.seed, soakSeedEnv, s.seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the soak failed; replay it with %s=%d", soakSeedEnv, s.seed)
		}
	})
	s.duration = soakDefaultDuration
	if v := os.Getenv(soakDurationEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "%s=%q: want a Go duration such as 10m", soakDurationEnv, v)
		require.Positive(t, d, "%s=%q", soakDurationEnv, v)
		s.duration = d
	}
	s.hostCount = 3
	if v := os.Getenv(soakHostsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s=%q: want a number of hosts", soakHostsEnv, v)
		require.True(t, n >= 2, "%s=%q: want at least 2 hosts", soakHostsEnv, v)
		s.hostCount = n
	}
	kinds := []string{string(engine.Terraform), string(engine.OpenTofu)}
	if v := os.Getenv(soakEnginesEnv); v != "" {
		kinds = strings.Split(v, ",")
	}
	s.engines, s.engineExes = map[string]string{}, map[string]bool{}
	for _, k := range kinds {
		require.True(t, k == string(engine.Terraform) || k == string(engine.OpenTofu), "%s: unknown engine %q", soakEnginesEnv, k)
		p := testenv.Binary(t, engine.Kind(k))
		s.engines[k] = p
		exe, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		s.engineExes[exe] = true
	}
	s.rng = rand.New(rand.NewPCG(s.seed, 0))

	s.dir = t.TempDir()
	// Leftovers are ended last, after the hosts (cleanups run in reverse).
	t.Cleanup(func() { killLeftovers(t, s.dir) })
	s.root = filepath.Join(s.dir, "workdirs")
	s.cache = filepath.Join(s.dir, "plugin-cache")
	s.tmp = filepath.Join(s.dir, "tmp")
	s.logs = filepath.Join(s.dir, "logs")
	for _, d := range []string{s.tmp, s.logs} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	src := filepath.Join(s.dir, "infra", "item")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(soakComponent), 0o644))
	s.source = src

	buildOnce.Do(func() { buildDir, buildErr = os.MkdirTemp("", "tfisolate-stress-provider-") })
	require.NoError(t, buildErr)
	prov, err := demo.ServeProvider(buildDir, 0)
	require.NoError(t, err)
	t.Cleanup(prov.Close)
	s.prov = prov
	s.caFile = filepath.Join(s.dir, "ca.pem")
	require.NoError(t, prov.WriteCAFile(s.caFile))
	s.wantH1 = map[string]string{}
	var size int
	for _, v := range demo.Versions {
		var zip bytes.Buffer
		require.NoError(t, testprovider.PackageZip(&zip, prov.Binary.Path, v))
		size = zip.Len()
		p := filepath.Join(t.TempDir(), v+".zip")
		require.NoError(t, os.WriteFile(p, zip.Bytes(), 0o644))
		h, err := dirhash.HashZip(p, dirhash.Hash1)
		require.NoError(t, err)
		s.wantH1[v] = h
	}
	prov.SetThrottle(int64(size) / int64(soakDownload/time.Second))

	for n := 1; n <= soakInstances; n++ {
		id, err := workdir.ID(soakStack, soakInstance(n))
		require.NoError(t, err)
		s.insts[n] = &instTrack{id: id, ids: map[string]string{}}
		s.instEngine[n] = kinds[(n-1)%len(kinds)]
	}
	s.writes, err = newStateWrites()
	require.NoError(t, err)
	t.Cleanup(s.writes.close)
	t.Cleanup(s.killHosts)
	t.Logf("soak: %d hosts, %d instances (engines %v), %s of faults, provider package %d bytes at %d bytes/s; load average %s",
		s.hostCount, soakInstances, kinds, s.duration, size, int64(size)/int64(soakDownload/time.Second), loadAvg())
	return s
}

// failf fails the soak at once, naming the seed.
func (s *soak) failf(format string, args ...any) {
	s.t.Helper()
	if len(s.faultLog) > 0 {
		s.t.Logf("last faults:\n  %s", strings.Join(s.faultLog[max(0, len(s.faultLog)-12):], "\n  "))
	}
	s.t.Fatalf("soak seed %d (replay: %s=%d): %s", s.seed, soakSeedEnv, s.seed, fmt.Sprintf(format, args...))
}

// violation records what a host's goroutine found wrong; the soak fails
// on it at its next check.
func (s *soak) violation(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// must fails the soak on err.
func (s *soak) must(err error) {
	s.t.Helper()
	if err != nil {
		s.failf("%v", err)
	}
}

// stopChecker lets the checker finish the faults it was given.
func (s *soak) stopChecker() {
	if !s.jobsClosed {
		s.jobsClosed = true
		close(s.jobs)
	}
}

func (s *soak) requireNoViolation() {
	s.t.Helper()
	s.mu.Lock()
	v := slices.Clone(s.violations)
	s.mu.Unlock()
	if len(v) > 0 {
		s.failf("%s", strings.Join(v, "\n"))
	}
}

func (s *soak) run() {
	start := time.Now()
	s.monitor.Add(1)
	go s.monitorProcs()
	s.checking.Add(1)
	go s.checker()
	for i := range s.hostCount {
		s.slots.Add(1)
		go s.slot(i)
	}
	s.injectFaults(start.Add(s.duration))
	faultsEnd := time.Now()

	// Let every host finish the Run it is in and every fault settle;
	// then nothing may be left running that a host started.
	close(s.stopLaunch)
	s.stopChecker()
	done := make(chan struct{})
	go func() { s.slots.Wait(); s.checking.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * soakBound):
		s.failf("hosts or checks still running %s after the faults ended: %v", 2*soakBound, s.liveHosts())
	}
	close(s.stopMon)
	s.monitor.Wait()
	s.requireNoViolation()
	for _, n := range sortedKeys(s.insts) {
		s.must(s.checkInstance(n, "after the last host"))
	}
	for _, n := range sortedKeys(s.insts) {
		if s.insts[n].damaged { // no host runs any more
			s.must(s.recover(n))
		}
	}
	s.must(s.checkCache())

	// The final clean Run: every instance, a short state-lock timeout, no
	// wait for a crashed engine (none may be left running).
	final := s.startHost(sortedKeys(s.insts), "final", true)
	<-final.exited
	if final.out == nil {
		s.failf("the final run printed no outcome (exit %v):\n%s", final.err, final.stderr.String())
	}
	for _, e := range final.out.RunErrs {
		s.t.Logf("final run error: %s", e)
	}
	if len(final.out.Results) != soakInstances {
		s.failf("the final run reported %d units, want %d: %+v", len(final.out.Results), soakInstances, final.out.Results)
	}
	for _, u := range final.out.Results {
		if u.Status != "succeeded" {
			log, _ := os.ReadFile(u.Log)
			s.failf("final run: unit %s %s (%s): %s\nlog %s:\n%s", u.Unit, u.Status, u.Kind, u.Err, u.Log, tail(log, 4000))
		}
		if u.StateLock {
			log, _ := os.ReadFile(u.Log)
			s.failf("final run: unit %s met a state lock left behind\n%s", u.Unit, tail(log, 3000))
		}
	}
	if final.err != nil {
		s.failf("the final run's host exited with %v:\n%s", final.err, final.stderr.String())
	}
	for _, n := range sortedKeys(s.insts) {
		s.must(s.checkInstance(n, "after the final run"))
		s.requireFinal(n)
	}
	s.must(s.checkCache())
	s.requireNothingLeft()
	s.summary(time.Since(start), faultsEnd.Sub(start))
}

// slot keeps one host running until the faults end: a host applies a
// random subset of the instances once, with a generation of its own, and
// is replaced when it exits, killed or not.
func (s *soak) slot(i int) {
	defer s.slots.Done()
	rng := rand.New(rand.NewPCG(s.seed, uint64(i+1)))
	for launch := 0; ; launch++ {
		select {
		case <-s.stopLaunch:
			return
		default:
		}
		k := 3 + rng.IntN(4)
		units := rng.Perm(soakInstances)[:k]
		for j := range units {
			units[j]++
		}
		sort.Ints(units)
		h := s.startHost(units, fmt.Sprintf("s%d-%d", i, launch), false)
		if h == nil {
			return
		}
		<-h.exited
		s.hostEnded(h)
	}
}

// soakHost is one host process.
type soakHost struct {
	name    string
	gen     string
	started time.Time
	pid     int
	start   uint64
	stderr  bytes.Buffer
	exited  chan struct{} // closed once waited for
	err     error         // exit status; read after exited
	out     *soakOutcome  // its last line; nil if it died before

	mu       sync.Mutex
	inflight map[string]bool // units started and not done
	faulted  map[string]bool // units a fault hit (all of them when the host was hit)
	hit      bool            // the host itself was signalled
}

// startHost starts a host applying units. A failure to start is a
// violation (from a slot) or fails the soak (the final run).
func (s *soak) startHost(units []int, gen string, final bool) *soakHost {
	cfg := soakHostConfig{
		Root: s.root, Cache: s.cache, Source: s.source,
		RegistryHost: s.prov.Host(), RegistryAddr: s.prov.Addr(), CAFile: s.caFile,
		Engines: s.engines, Gen: gen, Latency: soakLatency, Parallelism: soakParallelism,
		LockTimeout: 30 * time.Second, CrashedEngineWait: -1, LogDir: filepath.Join(s.logs, gen),
	}
	if final {
		cfg.Parallelism, cfg.LockTimeout, cfg.CrashedEngineWait = 4, 2*time.Second, 0
	}
	for _, n := range units {
		cfg.Units = append(cfg.Units, soakUnit{N: n, Engine: s.instEngine[n]})
	}
	b, _ := json.Marshal(cfg)
	h := &soakHost{name: fmt.Sprintf("host %s", gen), gen: gen, started: time.Now(), exited: make(chan struct{}), inflight: map[string]bool{}, faulted: map[string]bool{}}
	// The timeout is past every bound of the soak's own: it only keeps a
	// broken soak from hanging.
	p, err := childproc.Spawn(s.t, soakHostRole, childproc.WithEnv(soakHostEnv+"="+string(b), "TMPDIR="+s.tmp),
		childproc.WithStderr(&h.stderr), childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}),
		childproc.WithTimeout(s.duration+3*soakBound))
	if err != nil {
		if final {
			s.failf("start the final host: %v", err)
		}
		s.violation("start host %s: %v", gen, err)
		return nil
	}
	h.pid = p.PID()
	_, h.start, _ = procStat(h.pid)
	s.mu.Lock()
	s.live[h.pid] = h
	s.launches++
	s.mu.Unlock()
	go func() {
		defer close(h.exited)
		for {
			line, ok := p.ReadLine()
			if !ok {
				break
			}
			var l soakLine
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			switch {
			case l.Done != nil:
				h.out = l.Done
			case l.Phase == "queued":
			case l.Phase == "done":
				h.mu.Lock()
				delete(h.inflight, l.Unit)
				h.mu.Unlock()
			default:
				h.mu.Lock()
				h.inflight[l.Unit] = true
				h.mu.Unlock()
			}
		}
		h.err = p.Wait()
		s.mu.Lock()
		delete(s.live, h.pid)
		s.mu.Unlock()
	}()
	return h
}

// hostEnded accounts for a host's outcome: a unit may fail only where a
// fault hit it, or by refusing a state that an engine SIGKILL damaged.
func (s *soak) hostEnded(h *soakHost) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.out == nil {
		if !h.hit {
			s.violation("%s died by itself (exit %v):\n%s", h.name, h.err, tail(h.stderr.Bytes(), 3000))
		}
		return
	}
	if strings.Contains(h.stderr.String(), "panic:") || strings.Contains(h.stderr.String(), "DATA RACE") {
		s.violation("%s: %s", h.name, tail(h.stderr.Bytes(), 4000))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !h.hit {
		s.stats.hostsCompleted++
	}
	for _, u := range h.out.Results {
		key := u.Status
		if u.Kind != "" {
			key += "/" + u.Kind
		}
		s.stats.units[key]++
		if u.Crashed > 0 {
			s.stats.crashedFound++
		}
		if u.Waited > 0 {
			s.stats.crashedWaits++
		}
		n := unitInstance(u.Unit)
		in := s.insts[n]
		switch {
		case u.Status == "succeeded":
			if u.StateLock {
				s.violations = append(s.violations, fmt.Sprintf("%s: unit %s met a state lock: one was left behind (log %s)", h.name, u.Unit, u.Log))
			}
		case u.Kind == "damaged" && in != nil && (in.engineKO || in.damaged || in.badAt.After(h.started)):
			// The promised refusal of a state its own engine's SIGKILL
			// emptied or cut off.
			in.refusals++
			s.stats.refused++
		case u.Kind == "damaged" || u.Kind == "locked":
			s.violations = append(s.violations, fmt.Sprintf("%s: unit %s failed (%s) with no engine SIGKILL behind it: %s (log %s)", h.name, u.Unit, u.Kind, u.Err, u.Log))
		case h.hit || h.faulted[u.Unit]:
			// The fault's own doing.
		default:
			log, _ := os.ReadFile(u.Log)
			s.violations = append(s.violations, fmt.Sprintf("%s: unit %s %s though no fault hit it: %s\nlog %s:\n%s", h.name, u.Unit, u.Status, u.Err, u.Log, tail(log, 3000)))
		}
	}
}

// unitInstance maps a unit ID (soak/item/inst-NN) to its instance number.
func unitInstance(unit string) int {
	i := strings.LastIndex(unit, "inst-")
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(unit[i+len("inst-"):])
	return n
}

func (s *soak) liveHosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.live {
		out = append(out, h.name)
	}
	return out
}

// killHosts ends every host still running (the soak failed), by its pid,
// and joins the soak's goroutines.
func (s *soak) killHosts() {
	select {
	case <-s.stopLaunch:
	default:
		close(s.stopLaunch)
	}
	s.stopChecker()
	slotsDone := make(chan struct{})
	go func() { s.slots.Wait(); s.checking.Wait(); close(slotsDone) }()
	for {
		s.mu.Lock()
		var hs []*soakHost
		for _, h := range s.live {
			hs = append(hs, h)
		}
		s.mu.Unlock()
		for _, h := range hs {
			_ = syscall.Kill(h.pid, syscall.SIGKILL)
			<-h.exited
		}
		// A slot may have started one more host meanwhile.
		select {
		case <-slotsDone:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	select {
	case <-s.stopMon:
	default:
		close(s.stopMon)
	}
	s.monitor.Wait()
}

// monitorProcs records every process it sees under a running host, so
// that the end can check each one is gone (the watchers an engine's
// host starts run in / with an empty environment: only their parent
// names them).
func (s *soak) monitorProcs() {
	defer s.monitor.Done()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		procs := scanProcs()
		s.mu.Lock()
		for pid := range s.live {
			for _, d := range descendants(procs, pid) {
				s.seen[d] = procs[d]
			}
		}
		s.mu.Unlock()
		select {
		case <-s.stopMon:
			return
		case <-tick.C:
		}
	}
}

// stateDir is where instance n's engine runs and keeps its state.
func (s *soak) stateDir(n int) string { return filepath.Join(s.root, s.insts[n].id, "src") }

func (s *soak) statePath(n int) string { return filepath.Join(s.stateDir(n), "terraform.tfstate") }

// target is a process to signal and what it belongs to.
type target struct {
	kind string // host, engine or provider
	p    pinfo
	host *soakHost
	inst int // the instance of the engine or provider; 0 for a host
	// engines are the engines under a host target, found just before the
	// signal: they must finish once their host is gone.
	engines []pinfo
	// insts are the instances the fault may have touched.
	insts []int
}

// injectFaults signals victims until deadline. Each fault waits (a random
// gap, or for the next state write of any instance), picks a target,
// signals it, waits until it and what it took down have ended, and checks
// what it touched.
func (s *soak) injectFaults(deadline time.Time) {
	for i := 0; time.Now().Before(deadline); i++ {
		mode, kind, sig := pick(s.rng, soakModes), pick(s.rng, soakKinds), pick(s.rng, soakSignals)
		gap := time.Duration(500+s.rng.IntN(2000)) * time.Millisecond
		if i == 0 {
			// The first fault: a host SIGKILLed while the provider
			// package is still downloading from the throttled mirror.
			mode, kind, sig, gap = "random", "host", syscall.SIGKILL, time.Duration(1500+s.rng.IntN(2000))*time.Millisecond
		}
		delay := time.Duration(s.rng.IntN(150)) * time.Millisecond
		pickN := s.rng.Uint64()
		time.Sleep(gap) // fault timing, not synchronization: when to strike is the random part
		var v *target
		if mode == "state-write" {
			v = s.atStateWrite(kind, delay, pickN, deadline)
		} else {
			v = s.anyVictim(kind, pickN)
		}
		if v == nil {
			s.stats.noVictim++
			s.t.Logf("%s: no %s to aim a %s fault at", time.Now().Format("15:04:05.000"), kind, mode)
			continue
		}
		if s.strike(v, sig) {
			s.stats.modes[mode]++
		}
		s.requireNoViolation()
	}
}

// atStateWrite waits for an engine to write an instance's state, waits
// delay more, and picks the target of kind that belongs to that engine
// (any target of kind when no state is written for 8 seconds).
func (s *soak) atStateWrite(kind string, delay time.Duration, pickN uint64, deadline time.Time) *target {
	for n := range s.insts {
		if _, err := os.Stat(s.stateDir(n)); err == nil {
			s.writes.add(s.stateDir(n), n)
		}
	}
	for {
		select {
		case <-s.writes.ch:
			continue // an earlier write: only a fresh one counts
		default:
		}
		break
	}
	t := time.NewTimer(min(8*time.Second, time.Until(deadline)+time.Millisecond))
	defer t.Stop()
	var n int
	select {
	case wd := <-s.writes.ch:
		n = s.writes.instance(wd)
	case <-t.C:
		// No state written for a while (a slow stretch: downloads,
		// inits): strike anywhere instead.
		return s.anyVictim(kind, pickN)
	}
	time.Sleep(delay) // fault timing: a little into the writing
	procs := scanProcs()
	for _, e := range s.engineProcs(procs) {
		if e.cwd == s.stateDir(n) {
			return s.victimOf(kind, e, procs, pickN)
		}
	}
	return nil
}

// anyVictim picks a random target of kind among everything running.
func (s *soak) anyVictim(kind string, pickN uint64) *target {
	procs := scanProcs()
	if kind == "host" {
		s.mu.Lock()
		var hs []*soakHost
		for _, h := range s.live {
			if h.gen != "final" {
				hs = append(hs, h)
			}
		}
		s.mu.Unlock()
		if len(hs) == 0 {
			return nil
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i].pid < hs[j].pid })
		return s.hostVictim(hs[pickN%uint64(len(hs))], procs)
	}
	engines := s.engineProcs(procs)
	if len(engines) == 0 {
		return nil
	}
	sort.Slice(engines, func(i, j int) bool { return engines[i].pid < engines[j].pid })
	return s.victimOf(kind, engines[pickN%uint64(len(engines))], procs, pickN)
}

// engineProcs lists the engines running under live hosts, with their
// instance known by their working dir.
func (s *soak) engineProcs(procs map[int]pinfo) []pinfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pinfo
	for pid := range s.live {
		for _, d := range descendants(procs, pid) {
			if p := procs[d]; s.engineExes[p.exe] && s.instOfDir(p.cwd) != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *soak) instOfDir(dir string) int {
	for n := range s.insts {
		if dir == s.stateDir(n) {
			return n
		}
	}
	return 0
}

// victimOf turns an engine into the target of kind: the engine, its host,
// or one of its provider plugins (the engine itself when it runs none).
func (s *soak) victimOf(kind string, e pinfo, procs map[int]pinfo, pickN uint64) *target {
	n := s.instOfDir(e.cwd)
	switch kind {
	case "host":
		s.mu.Lock()
		var h *soakHost
		for p := e.ppid; p > 1 && h == nil; p = procs[p].ppid {
			h = s.live[p]
		}
		s.mu.Unlock()
		if h == nil || h.gen == "final" {
			return nil
		}
		return s.hostVictim(h, procs)
	case "provider":
		// The engine's own plugin, else any running one: an engine closes
		// a plugin as soon as no step needs it any more, so many have
		// none when their state is written.
		if v := s.providerOf([]pinfo{e}, procs, pickN); v != nil {
			return v
		}
		if v := s.providerOf(s.engineProcs(procs), procs, pickN); v != nil {
			return v
		}
	}
	return &target{kind: "engine", p: e, host: s.hostOf(e, procs), inst: n, insts: []int{n}}
}

// providerOf picks one of the provider plugins the engines run, or nil.
func (s *soak) providerOf(engines []pinfo, procs map[int]pinfo, pickN uint64) *target {
	type plugin struct{ p, engine pinfo }
	var ps []plugin
	for _, e := range engines {
		for _, d := range descendants(procs, e.pid) {
			if p := procs[d]; strings.HasPrefix(filepath.Base(p.exe), "terraform-provider-") {
				ps = append(ps, plugin{p, e})
			}
		}
	}
	if len(ps) == 0 {
		return nil
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].p.pid < ps[j].p.pid })
	pl := ps[pickN%uint64(len(ps))]
	n := s.instOfDir(pl.engine.cwd)
	return &target{kind: "provider", p: pl.p, host: s.hostOf(pl.engine, procs), inst: n, insts: []int{n}}
}

func (s *soak) hostOf(p pinfo, procs map[int]pinfo) *soakHost {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid := p.ppid; pid > 1; pid = procs[pid].ppid {
		if h := s.live[pid]; h != nil {
			return h
		}
	}
	return nil
}

// hostVictim is host h with the engines it runs and the instances it is
// in the middle of.
func (s *soak) hostVictim(h *soakHost, procs map[int]pinfo) *target {
	v := &target{kind: "host", p: pinfo{pid: h.pid, start: h.start}, host: h}
	for _, d := range descendants(procs, h.pid) {
		if p := procs[d]; s.engineExes[p.exe] {
			v.engines = append(v.engines, p)
			if n := s.instOfDir(p.cwd); n != 0 {
				v.insts = append(v.insts, n)
			}
		}
	}
	h.mu.Lock()
	for u := range h.inflight {
		if n := unitInstance(u); n != 0 && !slices.Contains(v.insts, n) {
			v.insts = append(v.insts, n)
		}
	}
	h.mu.Unlock()
	return v
}

// strike signals v and hands what must be waited for and checked to the
// checker, so the next fault can come while this one settles. It reports
// false when v was gone before the signal.
func (s *soak) strike(v *target, sig syscall.Signal) bool {
	fd, ok := openPidfd(v.p.pid, v.p.start)
	if !ok {
		s.stats.noVictim++
		return false
	}
	job := settleJob{fd: fd, sig: sig, kind: v.kind, host: v.host, insts: v.insts}
	for _, e := range v.engines {
		if efd, ok := openPidfd(e.pid, e.start); ok {
			job.engines = append(job.engines, efd)
		}
	}
	if h := v.host; h != nil {
		h.mu.Lock()
		if v.kind == "host" {
			h.hit = true
		}
		for u := range h.inflight {
			if v.kind == "host" || unitInstance(u) == v.inst {
				h.faulted[u] = true
			}
		}
		h.mu.Unlock()
	}
	if v.kind == "engine" && sig == syscall.SIGKILL {
		// terraform alone may leave an empty or cut-off state when it is
		// SIGKILLed while writing it.
		s.mu.Lock()
		s.insts[v.inst].engineKO, s.insts[v.inst].badAt = true, time.Now()
		s.mu.Unlock()
	}
	if err := fd.signal(sig); err != nil {
		job.close()
		s.stats.noVictim++
		return false
	}
	s.mu.Lock()
	s.stats.faults[v.kind+" "+sigName(sig)]++
	if v.kind == "host" {
		s.stats.hostsSignalled++
	}
	s.mu.Unlock()
	job.what = fmt.Sprintf("%s %s pid %d", sigName(sig), v.kind, v.p.pid)
	if v.inst != 0 {
		job.what += fmt.Sprintf(" (instance %d, %s)", v.inst, s.instEngine[v.inst])
	}
	if v.host != nil {
		job.what += " of " + v.host.name
	}
	s.faultLog = append(s.faultLog, time.Now().Format("15:04:05.000")+" "+job.what)
	s.t.Logf("%s fault %d: %s", time.Now().Format("15:04:05.000"), len(s.faultLog), job.what)
	s.jobs <- job
	return true
}

// settleJob is what a fault left to wait for and check.
type settleJob struct {
	what    string
	kind    string
	sig     syscall.Signal
	fd      pidfd
	host    *soakHost
	engines []pidfd // a host target's engines
	insts   []int
}

func (j settleJob) close() {
	j.fd.close()
	for _, e := range j.engines {
		e.close()
	}
}

// checker settles the faults in the order they came: it waits until the
// target and what it took down have ended, then checks what it touched.
// What it finds wrong is a violation, which fails the soak at its next
// step.
func (s *soak) checker() {
	defer s.checking.Done()
	rng := rand.New(rand.NewPCG(s.seed, 1000))
	for j := range s.jobs {
		if err := s.settle(j); err != nil {
			s.violation("%s: %v", j.what, err)
		} else if err := s.recoverRefused(rng); err != nil {
			s.violation("%v", err)
		}
		j.close()
	}
}

func (s *soak) settle(j settleJob) error {
	switch {
	case j.kind == "host":
		select {
		case <-j.host.exited:
		case <-time.After(soakBound):
			return fmt.Errorf("the host did not exit within %s", soakBound)
		}
		// Its engines were interrupted: each stops at a safe point and
		// writes its state, with no host left to wait for it.
		for _, e := range j.engines {
			if !e.wait(soakBound) {
				return fmt.Errorf("its engine pid %d still runs %s after the host died", e.pid, soakBound)
			}
			s.stats.interrupted++
		}
	case j.sig != syscall.SIGINT || j.kind == "engine":
		// A provider ignores SIGINT (its engine stops it); everything
		// else signalled ends.
		if !j.fd.wait(soakBound) {
			return fmt.Errorf("still running %s after the signal", soakBound)
		}
	}
	for _, n := range j.insts {
		if err := s.checkInstance(n, "after "+j.what); err != nil {
			return err
		}
	}
	return s.checkCache()
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}

// lockInstance takes instance n's lock (the workdir's flock, which every
// host takes before it touches the instance), waiting at most soakBound.
func (s *soak) lockInstance(n int) (*flock.Flock, error) {
	lk := flock.New(filepath.Join(s.root, ".locks", s.insts[n].id+".lock"))
	ctx, cancel := context.WithTimeout(context.Background(), soakBound)
	defer cancel()
	ok, err := lk.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("instance %d's lock is still held after %s (%v)", n, soakBound, err)
	}
	return lk, nil
}

// checkInstance checks instance n's state under its instance lock, once
// no engine runs in its workdir (a crashed host's engine may still be
// finishing; with the lock held, no other can start).
func (s *soak) checkInstance(n int, why string) error {
	if _, err := os.Stat(filepath.Join(s.root, ".locks", s.insts[n].id+".lock")); err != nil {
		return nil // never run yet
	}
	lk, err := s.lockInstance(n)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if err := s.waitNoEngine(n); err != nil {
		return err
	}
	s.stats.checks++
	b, err := os.ReadFile(s.statePath(n))
	if errors.Is(err, fs.ErrNotExist) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.insts[n].lineage != "" {
			return fmt.Errorf("%s: instance %d's state %s is gone (it had lineage %s)", why, n, s.statePath(n), s.insts[n].lineage)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: read instance %d's state: %w", why, n, err)
	}
	return s.judge(n, b, why)
}

// waitNoEngine waits, at most soakBound, until no engine runs in instance
// n's workdir.
func (s *soak) waitNoEngine(n int) error {
	deadline := time.Now().Add(soakBound)
	for {
		var running []string
		for _, p := range scanProcs() {
			if s.engineExes[p.exe] && p.cwd == s.stateDir(n) {
				running = append(running, fmt.Sprintf("%d %s", p.pid, p.cmdline))
			}
		}
		if len(running) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("engines still run in instance %d's workdir %s after its lock was taken: %v", n, soakBound, running)
		}
		time.Sleep(50 * time.Millisecond) // polling a bounded condition
	}
}

// soakState is what the soak reads of a state.
type soakState struct {
	Version   *int
	Lineage   string
	Serial    uint64
	Resources []struct {
		Mode, Type, Name string
		Instances        []struct {
			IndexKey   any `json:"index_key"`
			Status     string
			Attributes map[string]any
		}
	}
}

// objects maps each resource instance's address to its id and status.
func (st *soakState) objects() map[string][2]string {
	out := map[string][2]string{}
	for _, r := range st.Resources {
		if r.Mode != "managed" {
			continue
		}
		for _, in := range r.Instances {
			addr := r.Type + "." + r.Name
			if in.IndexKey != nil {
				addr += fmt.Sprintf("[%v]", in.IndexKey)
			}
			id, _ := in.Attributes["id"].(string)
			out[addr] = [2]string{id, in.Status}
		}
	}
	return out
}

// parseSoakState parses a state; ok is false for an empty or cut-off
// one.
func parseSoakState(b []byte) (*soakState, bool) {
	var st soakState
	if len(bytes.TrimSpace(b)) == 0 || json.Unmarshal(b, &st) != nil || st.Version == nil || st.Lineage == "" {
		return nil, false
	}
	return &st, true
}

// judge checks a state read under the instance lock against what was
// seen before, and remembers it.
func (s *soak) judge(n int, b []byte, why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.insts[n]
	st, ok := parseSoakState(b)
	if !ok {
		what := "cut off"
		if len(bytes.TrimSpace(b)) == 0 {
			what = "empty"
		}
		if !in.engineKO && !in.damaged {
			return fmt.Errorf("%s: instance %d's state %s is %s (%d bytes), and no engine of it was SIGKILLed: the SDK lost it", why, n, s.statePath(n), what, len(b))
		}
		if !in.damaged {
			s.stats.damaged++
			s.t.Logf("%s: instance %d's state is %s after its engine was SIGKILLed (terraform's own in-place write); every run must refuse it", why, n, what)
		}
		in.damaged, in.badAt = true, time.Now()
		return nil
	}
	if in.damaged {
		return fmt.Errorf("%s: instance %d's damaged state was replaced by a run (lineage %s serial %d, was lineage %s serial %d): it must have been refused",
			why, n, st.Lineage, st.Serial, in.lineage, in.serial)
	}
	return s.compare(n, st, why, false)
}

// compare checks st against instance n's history (s.mu held): same
// lineage, serial not lower, every object seen untainted still there with
// its id. After a recovery from the backup (restored), objects the backup
// lacks are forgotten and the serial may be lower: what the damaged run
// created is lost with its state, as the error says.
func (s *soak) compare(n int, st *soakState, why string, restored bool) error {
	in := s.insts[n]
	if in.lineage != "" && st.Lineage != in.lineage {
		return fmt.Errorf("%s: instance %d's state changed lineage from %s (serial %d) to %s (serial %d): a new state replaced it", why, n, in.lineage, in.serial, st.Lineage, st.Serial)
	}
	if !restored && st.Serial < in.serial {
		return fmt.Errorf("%s: instance %d's state went back from serial %d to %d", why, n, in.serial, st.Serial)
	}
	objs := st.objects()
	for addr, id := range in.ids {
		got, ok := objs[addr]
		switch {
		case !ok && restored:
			delete(in.ids, addr)
		case !ok:
			return fmt.Errorf("%s: instance %d's %s (id %s) is gone from its state (serial %d)", why, n, addr, id, st.Serial)
		case got[0] != id:
			return fmt.Errorf("%s: instance %d's %s was created twice: id %s, now %s (%s) at serial %d", why, n, addr, id, got[0], got[1], st.Serial)
		}
	}
	for addr, o := range objs {
		if addr != "terraform_data.churn" && o[1] == "" {
			in.ids[addr] = o[0]
		}
	}
	in.lineage, in.serial, in.engineKO = st.Lineage, st.Serial, false
	return nil
}

// recoverRefused recovers the damaged states that a run has refused (or,
// by chance, that no run met yet): what an operator does on that error.
func (s *soak) recoverRefused(rng *rand.Rand) error {
	for _, n := range sortedKeys(s.insts) {
		s.mu.Lock()
		in := s.insts[n]
		due := in.damaged && (in.refusals > 0 || rng.IntN(3) == 0)
		s.mu.Unlock()
		if due {
			if err := s.recover(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// recover follows the damaged-state error's steps under the instance
// lock: keep the damaged file, put the backup in its place. The test
// provider's objects live only in the state, so there is nothing to
// import: what the interrupted run created is simply created again.
func (s *soak) recover(n int) error {
	lk, err := s.lockInstance(n)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if err := s.waitNoEngine(n); err != nil {
		return err
	}
	p := s.statePath(n)
	b, _ := os.ReadFile(p)
	if _, ok := parseSoakState(b); ok {
		return fmt.Errorf("recovery: instance %d's damaged state is complete again: a run replaced it", n)
	}
	backup, err := os.ReadFile(p + ".backup")
	st, ok := parseSoakState(backup)
	if err != nil || !ok {
		return fmt.Errorf("instance %d's state is damaged and its backup %s is unusable (%v, %d bytes): nothing to recover from", n, p+".backup", err, len(backup))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Rename(p, fmt.Sprintf("%s.damaged-%d", p, s.stats.recovered)); err != nil {
		return fmt.Errorf("recovery of instance %d: %w", n, err)
	}
	if err := os.WriteFile(p, backup, 0o600); err != nil {
		return fmt.Errorf("recovery of instance %d: %w", n, err)
	}
	s.t.Logf("instance %d recovered from its backup (lineage %s serial %d) after %d refusals", n, st.Lineage, st.Serial, s.insts[n].refusals)
	s.stats.recovered++
	s.insts[n].damaged, s.insts[n].refusals, s.insts[n].badAt = false, 0, time.Now()
	return s.compare(n, st, "recovery from the backup", true)
}

// requireFinal checks that instance n holds every object of the final
// generation, none tainted.
func (s *soak) requireFinal(n int) {
	b, err := os.ReadFile(s.statePath(n))
	st, ok := parseSoakState(b)
	if err != nil || !ok {
		s.failf("after the final run: instance %d's state is unreadable (%v)", n, err)
	}
	objs := st.objects()
	want := []string{"terraform_data.anchor", "terraform_data.churn", "terraform_data.gen", "tfitest_item.fixed[0]", "tfitest_item.fixed[1]", "tfitest_item.fixed[2]"}
	got := sortedKeys(objs)
	if !slices.Equal(got, want) {
		s.failf("after the final run: instance %d holds %v, want %v", n, got, want)
	}
	for addr, o := range objs {
		if o[1] != "" {
			s.failf("after the final run: instance %d's %s is %s", n, addr, o[1])
		}
	}
	for _, r := range st.Resources {
		if r.Type != "terraform_data" || r.Name != "gen" {
			continue
		}
		if out, _ := r.Instances[0].Attributes["output"].(map[string]any); out["value"] != "final" {
			s.failf("after the final run: instance %d's terraform_data.gen holds %v, want the final generation", n, r.Instances[0].Attributes["output"])
		}
	}
}

// checkCache checks that every package in the provider cache hashes to
// the h1: of the package the registry serves for its version.
func (s *soak) checkCache() error {
	packages := filepath.Join(s.cache, ".pluginc", "packages") // pluginc's PackagesDir
	err := filepath.WalkDir(packages, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(packages, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if !d.IsDir() || len(parts) != 5 {
			return nil
		}
		want, ok := s.wantH1[parts[3]]
		if !ok {
			return fmt.Errorf("unexpected package %s", rel)
		}
		got, err := dirhash.HashDir(p, "", dirhash.Hash1)
		if err != nil {
			return fmt.Errorf("hash %s: %w", rel, err)
		}
		if got != want {
			return fmt.Errorf("cache entry %s hashes to %s, the published package to %s: torn", rel, got, want)
		}
		return filepath.SkipDir
	})
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && !dirExists(s.cache)) {
		return fmt.Errorf("provider cache: %w", err)
	}
	return nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// requireNothingLeft checks, once every host is gone, that no lock is
// held, no process runs, and no temp file is left.
func (s *soak) requireNothingLeft() {
	s.t.Helper()
	for _, dir := range []string{filepath.Join(s.root, ".locks"), filepath.Join(s.cache, ".pluginc", "locks")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".lock") {
				return err
			}
			lk := flock.New(p)
			ok, err := lk.TryLock()
			if err != nil || !ok {
				return fmt.Errorf("lock %s is held after every host ended (%v)", p, err)
			}
			return lk.Unlock()
		})
		if err != nil {
			s.failf("%v", err)
		}
	}
	if ents, _ := os.ReadDir(s.tmp); len(ents) > 0 {
		var names []string
		_ = filepath.WalkDir(s.tmp, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != s.tmp {
				names = append(names, strings.TrimPrefix(p, s.tmp+"/"))
			}
			return nil
		})
		s.failf("the hosts' TMPDIR %s is not empty: %v", s.tmp, names)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.cache, ".pluginc", "tmp")); len(ents) > 0 {
		s.failf("temp files left in the provider cache: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.root, ".tmp")); len(ents) > 0 {
		s.failf("workdir scratch left in the root: %v", ents)
	}
	_ = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tfisolate-tmp-") {
			s.failf("temp file left in a workdir: %s", p)
		}
		return nil
	})
	procs := scanProcs()
	var left []string
	for _, p := range procs {
		if p.pid == os.Getpid() {
			continue
		}
		under := p.cwd == s.dir || strings.HasPrefix(p.cwd, s.dir+"/") || environMentions(p.pid, s.dir)
		if seen, ok := s.seen[p.pid]; (ok && seen.start == p.start) || under {
			if alive(p.pid, p.start) {
				left = append(left, fmt.Sprintf("%d %s (cwd %s)", p.pid, p.cmdline, p.cwd))
			}
		}
	}
	if len(left) > 0 {
		s.failf("processes left after every host ended:\n  %s", strings.Join(left, "\n  "))
	}
}

func (s *soak) summary(total, faulting time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "soak seed %d: %s of faults, %s in all, %d host processes started (%d signalled, %d finished their Run)\n",
		s.seed, faulting.Round(time.Second), total.Round(time.Second), s.launches, s.stats.hostsSignalled, s.stats.hostsCompleted)
	n := 0
	for _, k := range sortedKeys(s.stats.faults) {
		fmt.Fprintf(&b, "  faults %-18s %d\n", k, s.stats.faults[k])
		n += s.stats.faults[k]
	}
	fmt.Fprintf(&b, "  faults in all %d (aimed at a state write %d, at random %d; %d found no target)\n", n, s.stats.modes["state-write"], s.stats.modes["random"], s.stats.noVictim)
	for _, k := range sortedKeys(s.stats.units) {
		fmt.Fprintf(&b, "  units %-26s %d\n", k, s.stats.units[k])
	}
	fmt.Fprintf(&b, "  states emptied or cut off by an engine SIGKILL %d, refusals of them %d, recovered from the backup %d\n", s.stats.damaged, s.stats.refused, s.stats.recovered)
	fmt.Fprintf(&b, "  engines running under a signalled host %d (each ended); units that found a crashed run %d (waited for its engine %d)\n", s.stats.interrupted, s.stats.crashedFound, s.stats.crashedWaits)
	fmt.Fprintf(&b, "  instance checks %d; provider downloads started %d; load average at the end %s", s.stats.checks, s.prov.TotalDownloads(), loadAvg())
	s.t.Log(b.String())
}

func sortedKeys[K interface{ ~int | ~string }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
