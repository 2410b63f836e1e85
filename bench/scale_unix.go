//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// scalePoint is one (N, parallelism) run of the scaling table.
type scalePoint struct {
	n, p      int
	ok        int
	wall      time.Duration
	ideal     time.Duration
	unitTotal time.Duration // sum of the units' Result.Duration
	inTF      time.Duration // sum of the terraform processes' lifetimes
	calls     int           // terraform processes
	downloads int
	// perUnit is each unit's time outside terraform, when every process
	// could be told to its unit (by TF_DATA_DIR); nil otherwise.
	perUnit []time.Duration
	// prepare and start split perUnit (same order, same condition): the
	// unit's preparation (PhasePrepare to PhaseInit: workdir, modules,
	// provider setup) and what follows until its first terraform process
	// (PhaseInit to it: the init record check, starting the process).
	prepare, start []time.Duration
}

// overhead is the SDK's mean time per unit outside terraform: the units'
// summed durations minus the time their terraform processes ran, minus
// what the timing wrapper itself added to each process start.
func (s scalePoint) overhead(wrapperCost time.Duration) time.Duration {
	return (s.unitTotal - s.inTF - time.Duration(s.calls)*wrapperCost) / time.Duration(s.n)
}

// medianMax formats the median and the largest of ds, "n/a" for none.
func medianMax(ds []time.Duration) (median, highest string) {
	if len(ds) == 0 {
		return "n/a", "n/a"
	}
	d := slices.Clone(ds)
	slices.Sort(d)
	mid := d[len(d)/2]
	if len(d)%2 == 0 {
		mid = (d[len(d)/2-1] + mid) / 2
	}
	return millis(mid), millis(d[len(d)-1])
}

// scaling applies N fresh units at each parallelism with a warm provider
// cache and prints wall time against the ideal and the SDK's overhead.
func (e *env) scaling(ctx context.Context, out io.Writer) error {
	dir := filepath.Join(e.o.root, "scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cache, err := e.prov.OpenCache(filepath.Join(dir, "plugin-cache"))
	if err != nil {
		return err
	}
	// The table is about running units, not downloading: fill the cache
	// first, as any earlier run would have.
	prov, err := pluginc.ParseProvider(testprovider.Source)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.log, "bench: scaling: filling the provider cache\n")
	if _, err := cache.Ensure(ctx, pluginc.Requirement{Provider: prov, Constraints: "~> 1.0"}); err != nil {
		return fmt.Errorf("fill the provider cache: %w", err)
	}
	cost, err := calibrate(ctx, dir)
	if err != nil {
		return err
	}

	var points []scalePoint
	for _, n := range e.o.scale {
		for _, p := range e.o.scalePar {
			if err := ctx.Err(); err != nil {
				return err
			}
			fmt.Fprintf(e.log, "bench: scaling: %d units at parallelism %d...\n", n, p)
			pt, err := e.scalePoint(ctx, filepath.Join(dir, fmt.Sprintf("n%d-p%d", n, p)), cache, n, p, cost)
			if err != nil {
				return fmt.Errorf("scaling, %d units at parallelism %d: %w", n, p, err)
			}
			fmt.Fprintf(e.log, "bench:   %d/%d succeeded in %s (ideal %s)\n", pt.ok, pt.n, secs(pt.wall), secs(pt.ideal))
			points = append(points, pt)
		}
	}

	fmt.Fprintf(out, "\n## Scaling: tfisolate runner, units whose apply waits %s\n\n", e.o.latency)
	t := [][]string{{"units", "parallelism", "succeeded", "wall", "ideal", "wall / ideal", "in terraform per unit", "SDK overhead per unit: mean", "median", "max", "median prepare", "median to first terraform", "terraform processes per unit", "downloads"}}
	for _, pt := range points {
		med, highest := medianMax(pt.perUnit)
		prepMed, _ := medianMax(pt.prepare)
		provMed, _ := medianMax(pt.start)
		t = append(t, []string{
			fmt.Sprint(pt.n),
			fmt.Sprint(pt.p),
			fmt.Sprintf("%d/%d", pt.ok, pt.n),
			secs(pt.wall),
			secs(pt.ideal),
			ratio(pt.wall, pt.ideal),
			secs(pt.inTF / time.Duration(pt.n)),
			millis(pt.overhead(cost)),
			med,
			highest,
			prepMed,
			provMed,
			fmt.Sprintf("%.1f", float64(pt.calls)/float64(pt.n)),
			fmt.Sprint(pt.downloads),
		})
	}
	writeTable(out, t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
	fmt.Fprintf(out, `
How to read it: every run starts from fresh workdirs (new state) with a
provider cache that already holds the provider. *ideal* is ceil(units /
parallelism) x %s: only the simulated cloud latency, as if terraform and
the SDK took no time. *in terraform per unit* is the mean lifetime of the
unit's terraform processes (init, apply; the %s sleep included). *SDK overhead per unit* is the mean of (unit duration - time
inside its terraform processes): workdir preparation and locking, provider
setup from the cache, lock file, process start and output handling; median
and max are over the units. Two parts of it come from the runner's events:
*prepare* (PhasePrepare to PhaseInit: instance lock, copying the
component, generated files, provider discovery, the shared setup from
the cache, the lock file) and *to first terraform* (PhaseInit to the
unit's first terraform process: the init record check, starting the
process; 0 when the wrapper's cost taken off leaves less). It is measured by pointing the runner at a
wrapper script that logs each terraform process's start, end and
TF_DATA_DIR (which unit it belongs to); the wrapper's own cost (%s per process,
a wrapped `+"`true`"+` against a plain one) is taken off. On a machine with
few cores, terraform's CPU-bound init competes for them, which shows as
time in terraform, not as SDK overhead.
`, e.o.latency, e.o.latency, millis(cost))
	return nil
}

func (e *env) scalePoint(ctx context.Context, dir string, cache *pluginc.Cache, n, p int, wrapperCost time.Duration) (scalePoint, error) {
	pt := scalePoint{n: n, p: p, ideal: time.Duration((n+p-1)/p) * e.o.latency}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pt, err
	}
	if !e.o.keep {
		defer os.RemoveAll(dir)
	}
	wrap, err := newWrapper(dir, "terraform", e.tf)
	if err != nil {
		return pt, err
	}
	wds, err := workdir.New(filepath.Join(dir, "workdirs"))
	if err != nil {
		return pt, err
	}
	ev := &phaseTimes{at: map[string]map[runner.Phase]time.Time{}}
	rn, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(wrap.path),
		runner.WithParallelism(p),
		runner.WithEvents(ev.record),
	)
	if err != nil {
		return pt, err
	}
	units := demo.Units(e.source, n, e.o.latency)
	d0 := e.prov.Downloads()
	start := time.Now()
	rep, err := rn.Run(ctx, runner.Apply, units...)
	pt.wall = time.Since(start)
	if rep == nil {
		return pt, err
	}
	pt.downloads = e.prov.Downloads() - d0
	for _, r := range rep.Results {
		if r.Status == runner.Succeeded {
			pt.ok++
		} else {
			fmt.Fprintf(e.log, "bench:   %s %s: %v\n", r.Unit, r.Status, r.Err)
		}
		pt.unitTotal += r.Duration
	}
	calls, err := wrap.calls()
	if err != nil {
		return pt, err
	}
	inTF, procs, first := map[string]time.Duration{}, map[string]int{}, map[string]time.Time{}
	unitCalls := calls[:0]
	for _, c := range calls {
		if c.dataDir == "" {
			// The runner's one engine probe (terraform version) per Run
			// belongs to no unit.
			continue
		}
		unitCalls = append(unitCalls, c)
		pt.inTF += c.end.Sub(c.start)
		inTF[c.dataDir] += c.end.Sub(c.start)
		procs[c.dataDir]++
		if f, ok := first[c.dataDir]; !ok || c.start.Before(f) {
			first[c.dataDir] = c.start
		}
	}
	calls = unitCalls
	pt.calls = len(calls)
	// Without a log dir the runner keeps a unit's log under its data dir
	// (DATADIR/tfisolate-logs/CMD.log), which ties processes to units.
	matched := 0
	for _, r := range rep.Results {
		dd := filepath.Dir(filepath.Dir(r.Log))
		if _, ok := procs[dd]; !ok {
			break
		}
		prep, init, ok := ev.span(r.Unit, runner.PhasePrepare, runner.PhaseInit)
		if !ok {
			break
		}
		matched += procs[dd]
		pt.perUnit = append(pt.perUnit, r.Duration-inTF[dd]-time.Duration(procs[dd])*wrapperCost)
		pt.prepare = append(pt.prepare, init.Sub(prep))
		pt.start = append(pt.start, max(first[dd].Sub(init)-wrapperCost, 0))
	}
	if len(pt.perUnit) != len(rep.Results) || matched != len(calls) {
		pt.perUnit, pt.prepare, pt.start = nil, nil, nil
	}
	if len(pt.perUnit) > 0 {
		i := slices.Index(pt.perUnit, slices.Max(pt.perUnit))
		fmt.Fprintf(e.log, "bench:   most SDK time outside terraform: %s, %s (lock wait %s)\n",
			rep.Results[i].Unit, millis(pt.perUnit[i]), millis(rep.Results[i].LockWait))
	}
	return pt, ctx.Err()
}

// phaseTimes records when each unit entered each phase.
type phaseTimes struct {
	mu sync.Mutex
	at map[string]map[runner.Phase]time.Time
}

func (p *phaseTimes) record(ev runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at[ev.Unit] == nil {
		p.at[ev.Unit] = map[runner.Phase]time.Time{}
	}
	if _, seen := p.at[ev.Unit][ev.Phase]; !seen {
		p.at[ev.Unit][ev.Phase] = ev.Time
	}
}

// span returns when unit entered phases a and b, if it entered both.
func (p *phaseTimes) span(unit string, a, b runner.Phase) (ta, tb time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ta, okA := p.at[unit][a]
	tb, okB := p.at[unit][b]
	return ta, tb, okA && okB
}
