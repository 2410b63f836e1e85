//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/harness/naive"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// provGroup is one served provider size and the warm caches every row of
// its scenarios starts from. Setting it up is not measured.
type provGroup struct {
	padding int64
	prov    *demo.Provider
	own     bool // started for this group: closed with it
	dir     string
	tfRC    string // terraform's CLI config: the network mirror and tfCache as plugin_cache_dir
	tfCache string // terraform's plugin cache (floor and workaround rows)
	tfLock  []byte // the lock file terraform wrote: the component's committed lock file
	pcDir   string // tfisolate's shared provider cache
	// OpenTofu's plugin cache and the lock file it wrote, when tofu runs.
	tofuRC, tofuCache string
	tofuLock          []byte
	floors            map[time.Duration]*floorCosts // by simulated latency
}

// floorCosts is terraform alone, per unit, in a prepared workdir.
type floorCosts struct {
	cold, coldInit, coldApply unitCost
	warm                      unitCost
}

// engineEnv is the environment of terraform and tofu processes the bench
// starts itself: the process's, trust in the loopback registry's
// certificate, no update checks, plus extra.
func (g *provGroup) engineEnv(extra ...string) []string {
	env := append(os.Environ(), g.prov.TerraformEnv()...)
	env = append(env, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	return append(env, extra...)
}

// floorSection measures each scenario against terraform's floor, the
// hand-written workaround and OpenTofu, and prints a table per pass, then
// the goals and, for each goal tfisolate misses, where its time went.
func (e *env) floorSection(ctx context.Context, out io.Writer) error {
	scs := e.o.floorScenarios()
	fmt.Fprintf(out, "\n## Against the floor: tfisolate, the hand-written workaround and OpenTofu\n\n")
	fmt.Fprint(out, floorIntro)
	tofuBin, tofuVer, tofuErr := "", "", error(nil)
	if e.o.skipped(nameTofu) {
		tofuErr = fmt.Errorf("-skip %s", nameTofu)
	} else {
		tofuBin, tofuVer, tofuErr = e.findTofu(ctx)
	}
	if tofuErr != nil {
		fmt.Fprintf(out, "\nOpenTofu rows skipped: %v.\n", tofuErr)
		fmt.Fprintf(e.log, "bench: OpenTofu rows skipped: %v\n", tofuErr)
	} else {
		fmt.Fprintf(out, "\nOpenTofu: %s.\n", tofuVer)
	}
	cost, err := calibrate(ctx, e.o.root)
	if err != nil {
		return err
	}
	var results []scenarioResult
	groups := map[int64]*provGroup{}
	defer func() {
		for _, g := range groups {
			if g.own {
				g.prov.Close()
			}
		}
	}()
	for i, s := range scs {
		if err := ctx.Err(); err != nil {
			return err
		}
		g := groups[s.padding]
		if g == nil {
			if g, err = e.setupGroup(ctx, s.padding, tofuBin); err != nil {
				return fmt.Errorf("floor section, %s provider: %w", mib(s.padding), err)
			}
			groups[s.padding] = g
		}
		r, err := e.runScenario(ctx, out, g, s, tofuBin, tofuErr, cost)
		if err != nil {
			return fmt.Errorf("floor section, %s scenario: %w", s.key, err)
		}
		results = append(results, r)
		if !slices.ContainsFunc(scs[i+1:], func(l floorScenario) bool { return l.padding == s.padding }) {
			// No later scenario needs this provider: free its registry
			// (it holds every version's package in memory) and caches.
			if g.own {
				g.prov.Close()
				g.own = false
			}
			if !e.o.keep {
				if err := os.RemoveAll(g.dir); err != nil {
					return err
				}
			}
		}
	}
	printGoals(out, results, cost)
	return nil
}

const floorIntro = `The **floor** is terraform's own cost, with nothing else in the way: the
unit's command run alone (one process at a time, nothing else of the
bench running) in a prepared workdir, repeated; *L* is the median wall
time of one unit, *c* the median CPU time (user+system of terraform and
every process it started and waited for: provider, provisioner, from the
rusage wait4 returns). floor = max(ceil(N/p) x L, N x c / cores), cores
= runtime.NumCPU(): N units cannot finish sooner than ceil(N/p) waves of
one unit, nor sooner than the CPU they need spread over every core.

- **cold apply**: fresh instances (new workdir, no state, no data dir)
  with a warm provider cache. The floor's command is ` + "`terraform init`" + ` +
  ` + "`terraform apply`" + ` in a copy of the component that already holds its
  generated files and its ` + "`.terraform.lock.hcl`" + `, with terraform's
  plugin cache already holding the provider. Init is part of it because a
  fresh instance cannot run without it; the provider download and the
  workdir copy are not, because every row here starts with a warm cache
  (no row downloads anything) and copying is the tool's cost, not
  terraform's.
- **warm re-apply**: the same instances again, nothing changed. The
  floor's command is ` + "`terraform apply`" + ` alone in an initialized workdir
  with the state of an earlier apply: an unchanged re-apply needs no init.

Rows: **workaround** is the hand-written one (internal/harness/naive Preinit: one
shared copy of the component with its committed lock file, TF_DATA_DIR
per instance, terraform's plugin cache, one serial ` + "`terraform init`" + `, then
init + apply of every instance at once; a re-apply runs the same script
again). **tfisolate** is the runner (Apply) at parallelism p with its
shared provider cache; its workdir preparation is inside its wall time, and
it is pointed at a bash wrapper that logs each terraform process (what
"in terraform" below is made of; its cost is measured and noted). **OpenTofu**
is the peer that makes parallel init safe itself (1.10 and later lock
the plugin cache per package): a copy of the component per instance with
the lock file tofu wrote, TF_DATA_DIR per instance, one shared
TF_PLUGIN_CACHE_DIR, ` + "`tofu init`" + ` + ` + "`tofu apply`" + ` p at once; a
re-apply runs both again, as a script would. Every row reaches the
provider the same way: the component's explicit loopback source address,
installed from the loopback registry's network mirror. The copies the
workaround and OpenTofu rows run in are made before their clock starts.
*terraform CPU* is the rows' engine processes and all they started;
*SDK CPU* is the bench process itself over the run (for tfisolate: the
SDK); *cores used* is their sum over the wall time. Ratios are wall time
against the floor, the workaround and OpenTofu of the same pass. On a
shared machine the rows get fewer cores than the CPU bound assumes (see
*cores used*; the floor row's is what the bound takes): the wall ratios
against a CPU-bound floor then overstate the distance to it, while the
ratios between rows, measured one after another under the same load, and
the CPU factor in the breakdown below hold up better.
`

// setupGroup serves the provider with the given padding (the bench's own
// registry when it is the -provider-size one) and warms every row's cache
// from it: terraform's plugin cache by one terraform init (which also
// writes the lock file the workaround and floor rows use), tfisolate's
// cache by Ensure, OpenTofu's by one tofu init.
func (e *env) setupGroup(ctx context.Context, padding int64, tofuBin string) (*provGroup, error) {
	g := &provGroup{padding: padding, prov: e.prov, floors: map[time.Duration]*floorCosts{}}
	g.dir = filepath.Join(e.o.root, "floor", fmt.Sprintf("provider-%d", padding))
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return nil, err
	}
	if padding != e.o.padding || g.prov == nil {
		fmt.Fprintf(e.log, "bench: floor: building/serving the test provider padded by %s\n", mib(padding))
		// A directory of its own: the registry's CA file lives there, and
		// the bench's main registry keeps serving with its own.
		dir := filepath.Join(e.o.providerDir, fmt.Sprintf("padded-%d", padding))
		p, err := demo.ServeProvider(dir, padding, testregistry.WithThrottle(e.o.throttle))
		if err != nil {
			return nil, fmt.Errorf("serve the provider locally: %w", err)
		}
		g.prov, g.own = p, true
	}
	fail := func(err error) (*provGroup, error) {
		if g.own {
			g.prov.Close()
		}
		return nil, err
	}
	fmt.Fprintf(e.log, "bench: floor: warming the caches (%s provider)\n", mib(g.prov.Binary.Size))
	g.tfCache = filepath.Join(g.dir, "terraform-plugin-cache")
	g.tfRC = filepath.Join(g.dir, "terraform.rc")
	rc := append(g.prov.TerraformCLIConfig(), fmt.Sprintf("\nplugin_cache_dir = %q\n", g.tfCache)...)
	if err := os.MkdirAll(g.tfCache, 0o755); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(g.tfRC, rc, 0o644); err != nil {
		return fail(err)
	}
	seed, err := e.instanceDir(filepath.Join(g.dir, "seed-terraform"), 1, 0, nil)
	if err != nil {
		return fail(err)
	}
	env := g.engineEnv("TF_CLI_CONFIG_FILE="+g.tfRC, "TF_DATA_DIR="+filepath.Join(g.dir, "seed-terraform", "data"))
	if _, err := runProc(ctx, e.tf, seed, env, "init", "-input=false", "-no-color"); err != nil {
		return fail(fmt.Errorf("warm terraform's plugin cache: %w", err))
	}
	if g.tfLock, err = os.ReadFile(filepath.Join(seed, ".terraform.lock.hcl")); err != nil {
		return fail(err)
	}

	g.pcDir = filepath.Join(g.dir, "tfisolate-cache")
	cache, err := g.prov.OpenCache(g.pcDir)
	if err != nil {
		return fail(err)
	}
	prov, err := pluginc.ParseProvider(testprovider.Source)
	if err != nil {
		return fail(err)
	}
	if _, err := cache.Ensure(ctx, pluginc.Requirement{Provider: prov, Constraints: "~> 1.0"}); err != nil {
		return fail(fmt.Errorf("warm tfisolate's provider cache: %w", err))
	}

	if tofuBin != "" {
		g.tofuCache = filepath.Join(g.dir, "tofu-plugin-cache")
		g.tofuRC = filepath.Join(g.dir, "tofu.rc")
		if err := os.MkdirAll(g.tofuCache, 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(g.tofuRC, g.prov.TerraformCLIConfig(), 0o644); err != nil {
			return fail(err)
		}
		seed, err := e.instanceDir(filepath.Join(g.dir, "seed-tofu"), 1, 0, g.tfLock)
		if err != nil {
			return fail(err)
		}
		env := g.engineEnv("TF_CLI_CONFIG_FILE="+g.tofuRC, "TF_PLUGIN_CACHE_DIR="+g.tofuCache,
			"TF_DATA_DIR="+filepath.Join(g.dir, "seed-tofu", "data"))
		if _, err := runProc(ctx, tofuBin, seed, env, "init", "-input=false", "-no-color"); err != nil {
			return fail(fmt.Errorf("warm OpenTofu's plugin cache: %w", err))
		}
		if g.tofuLock, err = os.ReadFile(filepath.Join(seed, ".terraform.lock.hcl")); err != nil {
			return fail(err)
		}
	}
	return g, nil
}

// floorOf measures (once per group and latency) terraform alone in a
// prepared workdir: o.floorReps fresh instances each run init + apply
// (cold), then the last of them runs apply o.floorReps times more with
// nothing changed (warm). Nothing may download: the cache is warm and the
// lock file there.
func (e *env) floorOf(ctx context.Context, g *provGroup, latency time.Duration) (*floorCosts, error) {
	if f := g.floors[latency]; f != nil {
		return f, nil
	}
	fmt.Fprintf(e.log, "bench: floor: terraform alone, %d runs (%s provider, apply waits %s)\n", e.o.floorReps, mib(g.prov.Binary.Size), latency)
	dir := filepath.Join(g.dir, fmt.Sprintf("floor-%s", latency))
	d0 := g.prov.Downloads()
	var cw, cc, iw, ic, aw, ac, ww, wc []time.Duration
	var comp string
	var env []string
	for r := range e.o.floorReps {
		rd := filepath.Join(dir, fmt.Sprint(r))
		var err error
		if comp, err = e.instanceDir(rd, r+1, latency, g.tfLock); err != nil {
			return nil, err
		}
		env = g.engineEnv("TF_CLI_CONFIG_FILE="+g.tfRC, "TF_DATA_DIR="+filepath.Join(rd, "data"))
		in, err := runProc(ctx, e.tf, comp, env, "init", "-input=false", "-no-color")
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		ap, err := runProc(ctx, e.tf, comp, env, "apply", "-input=false", "-auto-approve", "-no-color")
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		iw, ic = append(iw, in.wall), append(ic, in.cpu)
		aw, ac = append(aw, ap.wall), append(ac, ap.cpu)
		cw, cc = append(cw, in.wall+ap.wall), append(cc, in.cpu+ap.cpu)
	}
	for range e.o.floorReps {
		ap, err := runProc(ctx, e.tf, comp, env, "apply", "-input=false", "-auto-approve", "-no-color")
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		if !containsLine(ap.out, "No changes.") {
			return nil, fmt.Errorf("floor: an unchanged re-apply in %s changed something:\n%s", comp, tail(ap.out, 2000))
		}
		ww, wc = append(ww, ap.wall), append(wc, ap.cpu)
	}
	if d := g.prov.Downloads() - d0; d > 0 {
		return nil, fmt.Errorf("floor: terraform downloaded the provider %d times from a warm cache", d)
	}
	f := &floorCosts{cold: costOf(cw, cc), coldInit: costOf(iw, ic), coldApply: costOf(aw, ac), warm: costOf(ww, wc)}
	g.floors[latency] = f
	if !e.o.keep {
		_ = os.RemoveAll(dir)
	}
	return f, nil
}

// containsLine reports whether some line of out starts with prefix.
func containsLine(out []byte, prefix string) bool {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// title describes a scenario in one line.
func (s floorScenario) title(size int64) string {
	lat := "no simulated latency (CPU-bound)"
	if s.latency > 0 {
		lat = fmt.Sprintf("apply waits %s", s.latency)
	}
	return fmt.Sprintf("%d instances, %s provider, %s, parallelism %d", s.n, mib(size), lat, s.p)
}

// runScenario measures one scenario's passes and prints their tables.
func (e *env) runScenario(ctx context.Context, out io.Writer, g *provGroup, s floorScenario, tofuBin string, tofuErr error, wrapperCost time.Duration) (scenarioResult, error) {
	res := scenarioResult{s: s, title: s.title(g.prov.Binary.Size)}
	began := readCPUTimes()
	fmt.Fprintf(out, "\n### %s: %s\n\n", s.key, res.title)
	fmt.Fprintf(e.log, "bench: floor: scenario %s: %s\n", s.key, res.title)
	costs, err := e.floorOf(ctx, g, s.latency)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(out, "Load average at the start: %s. Terraform alone (median of %d runs): cold apply L = %s, c = %s CPU (init %s / %s CPU, apply %s / %s CPU); warm re-apply L = %s, c = %s CPU.\n",
		loadAvg(), costs.cold.runs, secs(costs.cold.wall), secs(costs.cold.cpu), secs(costs.coldInit.wall), secs(costs.coldInit.cpu),
		secs(costs.coldApply.wall), secs(costs.coldApply.cpu), secs(costs.warm.wall), secs(costs.warm.cpu))

	dir := filepath.Join(g.dir, s.key)
	wa := filepath.Join(dir, "workaround")
	tofuDir := filepath.Join(dir, "tofu")
	if err := os.MkdirAll(wa, 0o755); err != nil {
		return res, err
	}
	tfi, err := e.newTfiState(filepath.Join(dir, "tfisolate"), s)
	if err != nil {
		return res, err
	}
	var gated *tfiState
	if !e.o.skip[skipGated] {
		if gated, err = e.newTfiState(filepath.Join(dir, "tfisolate-gated"), s); err != nil {
			return res, err
		}
		gated.opts = []runner.Option{runner.WithCoreGate(0)}
	}
	passes := []string{passCold}
	if s.warm {
		passes = append(passes, passWarm)
	}
	for _, pass := range passes {
		cost := costs.cold
		if pass == passWarm {
			cost = costs.warm
		}
		pr := passResult{pass: pass, floor: newFloor(s.n, s.p, runtime.NumCPU(), cost)}
		again := pass == passWarm
		if s.workaround {
			fmt.Fprintf(e.log, "bench: floor: %s, %s: workaround...\n", s.key, pass)
			r, err := e.workaroundRow(ctx, g, s, wa, again)
			if err != nil {
				return res, fmt.Errorf("workaround, %s: %w", pass, err)
			}
			pr.workaround = r
			logRow(e.log, r)
		}
		fmt.Fprintf(e.log, "bench: floor: %s, %s: tfisolate...\n", s.key, pass)
		r, err := e.tfisolateRow(ctx, g, s, tfi, wrapperCost)
		if err != nil {
			return res, fmt.Errorf("tfisolate, %s: %w", pass, err)
		}
		pr.tfisolate = r
		logRow(e.log, r)
		if gated != nil {
			fmt.Fprintf(e.log, "bench: floor: %s, %s: tfisolate with the core gate...\n", s.key, pass)
			r, err := e.tfisolateRow(ctx, g, s, gated, wrapperCost)
			if err != nil {
				return res, fmt.Errorf("tfisolate (core gate), %s: %w", pass, err)
			}
			r.label = nameGated
			pr.gated = r
			logRow(e.log, r)
		}
		if tofuBin != "" {
			fmt.Fprintf(e.log, "bench: floor: %s, %s: OpenTofu...\n", s.key, pass)
			r, err := e.tofuRow(ctx, g, s, tofuBin, tofuDir, again)
			if err != nil {
				return res, fmt.Errorf("OpenTofu, %s: %w", pass, err)
			}
			pr.tofu = r
			logRow(e.log, r)
		} else {
			pr.tofu = &peerRow{label: "OpenTofu", skipped: tofuErr.Error()}
		}
		printPass(out, pr)
		res.passes = append(res.passes, pr)
	}
	fmt.Fprintf(out, "\nSteal time over the scenario: %s.\n", began.stealSince())
	if !e.o.keep {
		// The caches stay for the group's other scenarios.
		if err := os.RemoveAll(dir); err != nil {
			return res, err
		}
	}
	return res, nil
}

func logRow(w io.Writer, r *peerRow) {
	fmt.Fprintf(w, "bench:   %s: %d/%d succeeded in %s\n", r.label, r.ok, r.n, secs(r.wall))
}

// workaroundRow runs the hand-written workaround once: fresh (cold) or
// again in the same dirs (warm).
func (e *env) workaroundRow(ctx context.Context, g *provGroup, s floorScenario, scratch string, again bool) (*peerRow, error) {
	cfg := naive.Config{
		Terraform:      e.tf,
		Source:         e.infra,
		Component:      demo.Component,
		Scratch:        scratch,
		Instances:      s.n,
		Command:        "apply",
		CLIConfig:      g.prov.TerraformCLIConfig(),
		Env:            g.engineEnv(),
		Vars:           func(i int) []byte { return demo.VarsJSON(i+1, s.latency) },
		Files:          func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
		PluginCacheDir: g.tfCache,
		LockFile:       g.tfLock,
		Rerun:          again,
	}
	d0, self0 := g.prov.Downloads(), selfCPU()
	res, err := naive.Run(ctx, cfg, naive.Preinit)
	if err != nil {
		return nil, err
	}
	r := &peerRow{label: "workaround", n: s.n, ok: res.Succeeded, wall: res.Wall, tfCPU: res.CPU, sdkCPU: selfCPU() - self0,
		downloads: g.prov.Downloads() - d0, inits: s.n + 1, errs: map[string]int{}}
	for _, oc := range res.Outcomes {
		switch {
		case len(oc.ErrorLines) > 0:
			r.errs[errorKey(oc.ErrorLines)]++
		case oc.Err != nil:
			r.errs[firstLine(oc.Err.Error())]++
		}
	}
	return r, ctx.Err()
}

// tfiState is what tfisolate's row keeps between a scenario's passes, as
// a tool run twice keeps it on disk: the workdirs and the wrapper (its
// path is part of what the runner's init record depends on).
type tfiState struct {
	wds   *workdir.Manager
	wrap  *wrapper
	units []runner.Unit
	opts  []runner.Option // added to the row's runner options (the memory section's budget)
}

func (e *env) newTfiState(dir string, s floorScenario) (*tfiState, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	wrap, err := newWrapper(dir, "terraform", e.tf)
	if err != nil {
		return nil, err
	}
	wds, err := workdir.New(filepath.Join(dir, "workdirs"))
	if err != nil {
		return nil, err
	}
	return &tfiState{wds: wds, wrap: wrap, units: demo.Units(e.source, s.n, s.latency)}, nil
}

// tfisolateRow runs the units once with a new runner (as a new invocation
// of a tool would) over the scenario's workdirs.
func (e *env) tfisolateRow(ctx context.Context, g *provGroup, s floorScenario, st *tfiState, wrapperCost time.Duration) (*peerRow, error) {
	cache, err := g.prov.OpenCache(g.pcDir)
	if err != nil {
		return nil, err
	}
	ev := &phaseTimes{at: map[string]map[runner.Phase]time.Time{}}
	rn, err := runner.New(append([]runner.Option{
		runner.WithWorkdirs(st.wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(st.wrap.path),
		runner.WithParallelism(s.p),
		runner.WithEvents(ev.record),
	}, st.opts...)...)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(st.wrap.log); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	d0, self0, child0 := g.prov.Downloads(), selfCPU(), childCPU()
	start := time.Now()
	rep, err := rn.Run(ctx, runner.Apply, st.units...)
	wall := time.Since(start)
	if rep == nil {
		return nil, err
	}
	r := &peerRow{label: "tfisolate", n: len(st.units), wall: wall, tfCPU: childCPU() - child0, sdkCPU: selfCPU() - self0,
		downloads: g.prov.Downloads() - d0, errs: map[string]int{}}
	for _, res := range rep.Results {
		if !res.InitSkipped {
			r.inits++
		}
		if res.Status == runner.Succeeded {
			r.ok++
			continue
		}
		r.errs[firstLine(fmt.Sprint(res.Err))]++
	}
	calls, err := st.wrap.calls()
	if err != nil {
		return nil, err
	}
	r.split = splitPhases(rep.Results, ev, calls, wrapperCost)
	return r, ctx.Err()
}

// tofuRow runs init + apply of every instance with OpenTofu, p at once:
// in fresh copies (cold) or again in the same ones (warm).
func (e *env) tofuRow(ctx context.Context, g *provGroup, s floorScenario, bin, dir string, again bool) (*peerRow, error) {
	comps := make([]string, s.n)
	envs := make([][]string, s.n)
	for i := range s.n {
		inst := filepath.Join(dir, fmt.Sprint(i+1))
		if again {
			comps[i] = filepath.Join(inst, "src", filepath.FromSlash(demo.Component))
		} else {
			var err error
			if comps[i], err = e.instanceDir(filepath.Join(inst, "src"), i+1, s.latency, g.tofuLock); err != nil {
				return nil, err
			}
		}
		envs[i] = g.engineEnv("TF_CLI_CONFIG_FILE="+g.tofuRC, "TF_PLUGIN_CACHE_DIR="+g.tofuCache, "TF_DATA_DIR="+filepath.Join(inst, "data"))
	}
	r := &peerRow{label: "OpenTofu", n: s.n, inits: s.n, errs: map[string]int{}}
	var mu sync.Mutex
	sem := make(chan struct{}, s.p)
	d0, self0, child0 := g.prov.Downloads(), selfCPU(), childCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range s.n {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			_, err := runProc(ctx, bin, comps[i], envs[i], "init", "-input=false", "-no-color")
			if err == nil {
				_, err = runProc(ctx, bin, comps[i], envs[i], "apply", "-input=false", "-auto-approve", "-no-color")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.errs[tofuErrorKey(err)]++
				return
			}
			r.ok++
		})
	}
	wg.Wait()
	r.wall, r.tfCPU, r.sdkCPU = time.Since(start), childCPU()-child0, selfCPU()-self0
	r.downloads = g.prov.Downloads() - d0
	return r, ctx.Err()
}

// tofuErrorKey is the error lines tofu printed, or the error's first line.
func tofuErrorKey(err error) string {
	if lines := errorLinesOf(err.Error()); len(lines) > 0 {
		return errorKey(lines)
	}
	return firstLine(err.Error())
}

// errorLinesOf picks the "Error: ..." lines of an engine's output,
// without the box-drawing prefix of its diagnostics.
func errorLinesOf(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(l, "│╷╵ ")); strings.HasPrefix(l, "Error: ") {
			out = append(out, l)
		}
	}
	return out
}

// splitPhases turns a run's events and the wrapper's log into means per
// unit. A unit's processes are told by TF_DATA_DIR: without -log-dir the
// runner keeps the unit's log under its data dir
// (DATADIR/tfisolate-logs/CMD.log).
func splitPhases(results []runner.Result, ev *phaseTimes, calls []call, wrapperCost time.Duration) *phaseSplit {
	inTF, procs := map[string]time.Duration{}, map[string]int{}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	unitCalls := 0
	for _, c := range calls {
		if c.dataDir == "" {
			continue // the runner's engine probe belongs to no unit
		}
		unitCalls++
		inTF[c.dataDir] += c.end.Sub(c.start)
		procs[c.dataDir]++
		if f, ok := first[c.dataDir]; !ok || c.start.Before(f) {
			first[c.dataDir] = c.start
		}
		if l, ok := last[c.dataDir]; !ok || c.end.After(l) {
			last[c.dataDir] = c.end
		}
	}
	sp := &phaseSplit{tied: true}
	var queued, prepare, init, command, in, outside, before, after time.Duration
	matched := 0
	for _, r := range results {
		ev.mu.Lock()
		at := ev.at[r.Unit]
		ev.mu.Unlock()
		q, okQ := at[runner.PhaseQueued]
		p, okP := at[runner.PhasePrepare]
		i, okI := at[runner.PhaseInit]
		a, okA := at[runner.PhaseApply]
		d, okD := at[runner.PhaseDone]
		if !okQ || !okP || !okI || !okA || !okD {
			continue
		}
		sp.units++
		queued += p.Sub(q)
		prepare += i.Sub(p)
		init += a.Sub(i)
		command += d.Sub(a)
		dd := filepath.Dir(filepath.Dir(r.Log))
		n, ok := procs[dd]
		if !ok {
			sp.tied = false
			continue
		}
		matched += n
		in += inTF[dd]
		outside += r.Duration - inTF[dd] - time.Duration(n)*wrapperCost
		// The wrapper's cost is mostly bash starting, before it reads the
		// start time: it lies before the first process.
		before += first[dd].Sub(p) - wrapperCost
		after += d.Sub(last[dd])
	}
	if sp.units == 0 {
		return nil
	}
	u := time.Duration(sp.units)
	sp.queued, sp.prepare, sp.init, sp.command = queued/u, prepare/u, init/u, command/u
	sp.procs = float64(unitCalls) / float64(sp.units)
	if matched != unitCalls || sp.units != len(results) {
		sp.tied = false
	}
	if sp.tied {
		sp.inTF, sp.outside, sp.before, sp.after = in/u, outside/u, before/u, after/u
	}
	return sp
}
