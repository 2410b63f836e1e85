//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/queue"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The cost section is issue 24's scale suite: how a Run's cost grows
// with its units, their distinct sources and the host around it. Every
// figure is a ratio taken in one run, against a target.

// costComponent has no provider to install: terraform's own floor is
// init and apply of a terraform_data.
const costComponent = `
variable "name" {
  type = string
}
resource "terraform_data" "x" {
  input = var.name
}
output "name" {
  value = var.name
}
`

// costRow is one line of the section's summary: a measured ratio and the
// target it is held to ("" when there is none).
type costRow struct {
	scenario, measure, value, ratio, target, met string
}

func (e *env) costSection(ctx context.Context, out io.Writer) error {
	dir := filepath.Join(e.o.root, "cost")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n## Cost: how a Run grows (issue 24's scale suite)\n\nLoad average before: %s.\n", loadAvg())
	began := readCPUTimes()
	var rows []costRow
	var errs []error
	add := func(name string, rs []costRow, err error) {
		rows = append(rows, rs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("cost, %s: %w", name, err))
			fmt.Fprintf(e.log, "bench: cost: %s: %v\n", name, err)
		}
	}
	for _, n := range e.o.costN {
		if ctx.Err() != nil {
			break
		}
		rs, err := e.costTerraform(ctx, filepath.Join(dir, fmt.Sprintf("tf-%d", n)), n)
		add(fmt.Sprintf("%d units of real terraform", n), rs, err)
	}
	if len(e.o.costQueue) > 0 && ctx.Err() == nil {
		rs, err := costQueue(e.o.costQueue)
		add("queue", rs, err)
	}
	if e.o.costIdle > 0 && ctx.Err() == nil {
		rs, err := e.costIdle(ctx, filepath.Join(dir, "idle"))
		add("idle processes", rs, err)
	}
	if len(e.o.costAffected) > 0 && ctx.Err() == nil {
		rs, err := costAffected(filepath.Join(dir, "affected"), e.o.costAffected)
		add("Affected", rs, err)
	}
	if e.o.costInstances > 0 && ctx.Err() == nil {
		rs, err := e.costSourceOnce(ctx, filepath.Join(dir, "source"))
		add("source read once", rs, err)
	}
	t := [][]string{{"scenario", "measure", "value", "ratio", "target", "met"}}
	for _, r := range rows {
		t = append(t, []string{r.scenario, r.measure, r.value, r.ratio, r.target, r.met})
	}
	fmt.Fprintln(out)
	writeTable(out, t, 2, 3)
	fmt.Fprint(out, `
How to read it: *floor* is plain terraform in pre-made dirs at the same
parallelism (cold: init + apply; warm: apply of an initialized dir with
nothing to change). tfisolate's cold Run starts from fresh workdirs, its
warm Run applies again (init skipped), its skip-unchanged Run skips every
unit whose inputs equal its last apply's; the wide DAG is one root unit
whose output every other unit's Generate reads, and its floor runs the
root's dir first, then the others (dependency order). Terraform's own CPU per
unit drifts by a fifth between passes a minute apart on a shared VM, so
the floor and tfisolate's Runs are interleaved in rounds (-cost-reps),
each in fresh dirs: floor cold, cold Run, floor warm, warm Run, flat and
then wide DAG. A cold or warm ratio is the median over the rounds of the
Run against the floor pass right before it (wall, and CPU in brackets),
with the lowest and highest of the rounds' wall ratios; the met column
holds the median wall ratio. Floor and Run rows give the medians of the
rounds' wall and CPU; the CPU per unit row puts the SDK's own CPU (this
process's) beside terraform's (the floor's), medians of the rounds, and
the SDK's peak live heap above the start per unit, the highest of the
rounds (the skip-unchanged Run's from its one pass). The
skip-unchanged Run and the dry run run once, after the last round, in
its workdirs; the skip-unchanged ratio is against the median warm floor.
The warm floor runs once more right after each round's warm Run, each
terraform given the GOMAXPROCS a Run gives it (the cores over the
processes running, rounded up): the warm Run against that floor is the
SDK's own cost without the gain of sizing terraform's runtime.
*dry run* is Runner.DryRun over the same units: everything a Run does
but terraform.
The queue rows run internal/queue with a callback that does nothing (the
stub engine) and divide the process's CPU by the units. The idle rows
run the same skip-unchanged Run beside that many sleeping processes of
the same user. The source rows measure rchar of /proc/self/io (bytes
read() returned, page cache or not) over a dry run, with a fresh Runner
and workdir Manager, of instances already prepared once.
`)
	fmt.Fprintf(out, "\nSteal time over the section: %s.\n", began.stealSince())
	return errors.Join(errs...)
}

// met says whether got is within limit ("yes"/"NO").
func met(got, limit float64) string {
	if got <= limit {
		return "yes"
	}
	return "NO"
}

func ratioF(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// costShape is one shape of the real-terraform scenario (flat or wide
// DAG) over its rounds: each round's floor passes and tfisolate's Runs
// beside them, and the last round's Runner and workdirs, which the dry
// run and the skip-unchanged Run use after the rounds.
type costShape struct {
	name                             string
	units                            []runner.Unit
	rootFirst                        bool // the floor runs unit 0 alone, then the others (the wide DAG's order)
	floorCold, floorWarm, cold, warm []spent
	floorShared                      []spent         // the warm floor with GOMAXPROCS as a Run sets it, right after the warm Run
	sdkCold, sdkWarm                 []time.Duration // the SDK's own CPU
	heapCold, heapWarm               int64           // the highest over the rounds
	coldOK, warmOK                   []string
	r                                *runner.Runner
	wds                              *workdir.Manager
}

// costTerraform runs n units of real terraform, flat and as a wide DAG,
// cold and warm beside terraform's own floor in e.o.costReps rounds, then
// skip-unchanged once.
//
// On a shared VM terraform's own CPU per unit drifts by a fifth between
// passes a minute apart, so one floor pass before the Runs makes their
// ratio mostly noise. Each round therefore runs a floor pass right before
// the Run it is compared with, and a ratio is the median of the rounds'
// ratios.
func (e *env) costTerraform(ctx context.Context, dir string, n int) ([]costRow, error) {
	p := min(n, e.o.costPar)
	src := filepath.Join(dir, "component")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(costComponent), 0o644); err != nil {
		return nil, err
	}
	scen := fmt.Sprintf("%d units, p=%d", n, p)
	shapes := []*costShape{{name: "flat", units: costUnits(src, n, false)}, {name: "wide DAG", units: costUnits(src, n, true), rootFirst: true}}
	reps := e.o.costReps
	for round := range reps {
		for _, s := range shapes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			label := fmt.Sprintf("%s, %s, round %d/%d", scen, s.name, round+1, reps)
			if err := e.costRound(ctx, filepath.Join(dir, fmt.Sprintf("round%d-%s", round, s.name[:4])), p, label, s); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
		}
	}
	var rows []costRow
	for _, s := range shapes {
		fmt.Fprintf(e.log, "bench: cost: %s, %s: dry run...\n", scen, s.name)
		t0 := time.Now()
		steps, err := s.r.DryRun(ctx, runner.Apply, s.units)
		dry := time.Since(t0)
		if err != nil {
			return rows, fmt.Errorf("dry run: %w", err)
		}
		rs, err := runner.New(runner.WithWorkdirs(s.wds), runner.WithTerraform(e.tf), runner.WithParallelism(p), runner.WithSkipUnchanged())
		if err != nil {
			return rows, err
		}
		skip, err := e.timedRun(ctx, scen+", "+s.name+": skip-unchanged", rs, s.units)
		if err != nil {
			return rows, err
		}
		per := func(d time.Duration) string { return msDecimal(d / time.Duration(n)) }
		heap := func(b int64) string { return kib(b / int64(n)) }
		fc, fw := medianSpent(s.floorCold), medianSpent(s.floorWarm)
		coldRatio, rc := versus(s.cold, s.floorCold, "floor cold")
		warmRatio, rw := versus(s.warm, s.floorWarm, "floor warm")
		sharedRatio, _ := versus(s.warm, s.floorShared, "this floor")
		sharedRatio = "warm Run " + sharedRatio
		where, medians := scen+", "+s.name, fmt.Sprintf(" (median of %d rounds)", reps)
		if reps == 1 {
			medians = " (1 round)"
		}
		rows = append(rows,
			costRow{where, "floor cold (init + apply): wall, CPU" + medians, fc.String(), "", "", ""},
			costRow{where, "floor warm (apply): wall, CPU" + medians, fw.String(), "", "", ""},
			costRow{where, "cold Run (" + strings.Join(slices.Compact(s.coldOK), "; ") + "): wall, CPU" + medians,
				medianSpent(s.cold).String(), coldRatio, "<= 1.1x", met(rc, 1.1)},
			costRow{where, "warm Run (" + strings.Join(slices.Compact(s.warmOK), "; ") + "): wall, CPU" + medians,
				medianSpent(s.warm).String(), warmRatio, "<= 1.1x", met(rw, 1.1)},
			costRow{where, "floor warm, each terraform's GOMAXPROCS as a Run sets it: wall, CPU" + medians,
				medianSpent(s.floorShared).String(), sharedRatio, "", ""},
			costRow{where, "skip-unchanged Run (" + skip.summary + "): wall, CPU", skip.String(),
				fmt.Sprintf("%.2fx floor warm", ratioF(skip.wall, fw.wall)), "", ""},
			costRow{where, fmt.Sprintf("dry run (%d steps), per unit", len(steps)), millis(dry / time.Duration(n)), "", "", ""},
			costRow{where, "CPU per unit: the SDK's own (terraform's, the floor's), medians; the SDK's peak live heap per unit, highest",
				fmt.Sprintf("cold %s (terraform %s), %s; warm %s (terraform %s), %s; skip-unchanged %s, %s",
					per(median(s.sdkCold)), per(fc.cpu), heap(s.heapCold), per(median(s.sdkWarm)), per(fw.cpu), heap(s.heapWarm),
					per(skip.self), heap(skip.heap)), "", "", ""},
		)
	}
	return rows, ctx.Err()
}

// costRound runs one round of a shape in fresh dirs under dir:
// terraform's floor cold, tfisolate's cold Run, the floor warm, then
// tfisolate's warm Run, each Run right after the floor pass it is
// compared with.
func (e *env) costRound(ctx context.Context, dir string, p int, label string, s *costShape) error {
	dirs, err := floorDirs(filepath.Join(dir, "floor"), len(s.units))
	if err != nil {
		return err
	}
	wds, err := workdir.New(filepath.Join(dir, "workdirs"))
	if err != nil {
		return err
	}
	r, err := runner.New(runner.WithWorkdirs(wds), runner.WithTerraform(e.tf), runner.WithParallelism(p))
	if err != nil {
		return err
	}
	if _, err := r.Binary(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.log, "bench: cost: %s: floor cold...\n", label)
	fc, err := e.floorShaped(ctx, dirs, p, s.rootFirst, false, tfInit, tfApply)
	if err != nil {
		return err
	}
	cold, err := e.timedRun(ctx, label+": cold", r, s.units)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.log, "bench: cost: %s: floor warm...\n", label)
	fw, err := e.floorShaped(ctx, dirs, p, s.rootFirst, false, tfApply)
	if err != nil {
		return err
	}
	warm, err := e.timedRun(ctx, label+": warm", r, s.units)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.log, "bench: cost: %s: floor warm, GOMAXPROCS as a Run sets it...\n", label)
	fs, err := e.floorShaped(ctx, dirs, p, s.rootFirst, true, tfApply)
	if err != nil {
		return err
	}
	s.floorShared = append(s.floorShared, fs)
	s.floorCold, s.floorWarm = append(s.floorCold, fc), append(s.floorWarm, fw)
	s.cold, s.warm = append(s.cold, cold.spent), append(s.warm, warm.spent)
	s.sdkCold, s.sdkWarm = append(s.sdkCold, cold.self), append(s.sdkWarm, warm.self)
	s.heapCold, s.heapWarm = max(s.heapCold, cold.heap), max(s.heapWarm, warm.heap)
	s.coldOK, s.warmOK = append(s.coldOK, cold.summary), append(s.warmOK, warm.summary)
	s.r, s.wds = r, wds
	return nil
}

// runPass is one timed Run: its wall and CPU (this process's and its
// terraform processes'), the SDK's own CPU (this process's), its peak
// live heap above the start, and what became of the units.
type runPass struct {
	spent
	self    time.Duration
	heap    int64
	summary string
}

// timedRun applies units with r and measures it. A Run that reports on
// its units is measured even when some failed (the summary says so).
func (e *env) timedRun(ctx context.Context, what string, r *runner.Runner, units []runner.Unit) (runPass, error) {
	fmt.Fprintf(e.log, "bench: cost: %s...\n", what)
	heap := watchHeap()
	s0, c0, t0 := selfCPU(), childCPU(), time.Now()
	rep, err := r.Run(ctx, runner.Apply, units...)
	self := selfCPU() - s0
	p := runPass{spent: spent{time.Since(t0), self + childCPU() - c0}, self: self}
	p.heap = heap()
	if rep == nil {
		return p, err
	}
	ok, skipped := 0, 0
	for _, res := range rep.Results {
		if res.Status == runner.Succeeded {
			ok++
		}
		if res.Unchanged {
			skipped++
		}
	}
	p.summary = fmt.Sprintf("%d/%d succeeded, %d skipped as unchanged", ok, len(rep.Results), skipped)
	return p, nil
}

// versus compares tfisolate's Runs with the floor passes beside them,
// round by round: the median of the rounds' wall ratios (also returned,
// for the target) and of their CPU ratios, and the range of the wall
// ratios, e.g. "1.08x floor cold (CPU 1.07x; rounds 1.02-1.15x)".
func versus(runs, floors []spent, floor string) (string, float64) {
	var walls, cpus []float64
	for i := range min(len(runs), len(floors)) {
		walls = append(walls, ratioF(runs[i].wall, floors[i].wall))
		cpus = append(cpus, ratioF(runs[i].cpu, floors[i].cpu))
	}
	wall, lo, hi := spread(walls)
	cpu, _, _ := spread(cpus)
	rounds := fmt.Sprintf("rounds %.2f-%.2fx", lo, hi)
	if len(walls) == 1 {
		rounds = "1 round"
	}
	return fmt.Sprintf("%.2fx %s (CPU %.2fx; %s)", wall, floor, cpu, rounds), wall
}

// spread is the median of rs (the mean of the two middle values for an
// even count), its lowest and its highest; all 0 for none.
func spread(rs []float64) (med, lo, hi float64) {
	if len(rs) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(rs))
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + med) / 2
	}
	return med, s[0], s[len(s)-1]
}

// costUnits are n instances of src; in a wide DAG, unit 0 is the root
// whose output every other unit's Generate reads.
func costUnits(src string, n int, wide bool) []runner.Unit {
	units := make([]runner.Unit, n)
	for i := range units {
		inst := fmt.Sprintf("cost/u%05d", i)
		units[i] = runner.Unit{ID: inst, Workdir: workdir.Spec{Stack: "bench", Instance: inst, Source: src,
			Files: map[string][]byte{"terraform.tfvars.json": fmt.Appendf(nil, `{"name": %q}`, inst)}}}
		if wide && i > 0 {
			units[i].Workdir.Files = nil
			units[i].DependsOn = []string{units[0].ID}
			units[i].Generate = func(_ context.Context, deps map[string]runner.Result) (map[string][]byte, error) {
				root, ok := deps[units[0].ID].Outputs["name"]
				if !ok {
					return nil, errors.New("the root unit gave no output")
				}
				return map[string][]byte{"terraform.tfvars.json": fmt.Appendf(nil, `{"name": %q}`, inst+"-"+strings.Trim(string(root.Value), `"`))}, nil
			}
		}
	}
	return units
}

// spent is a pass's wall time and the CPU this process and its
// terraform processes used in it: on a loaded machine the CPU ratio is
// the steadier figure.
type spent struct{ wall, cpu time.Duration }

func (s spent) String() string { return secs(s.wall) + ", " + secs(s.cpu) }

// medianSpent is the median wall time and the median CPU of passes.
func medianSpent(ss []spent) spent {
	var walls, cpus []time.Duration
	for _, s := range ss {
		walls, cpus = append(walls, s.wall), append(cpus, s.cpu)
	}
	return spent{median(walls), median(cpus)}
}

// The floor's terraform commands.
var (
	tfInit  = []string{"init", "-input=false", "-no-color"}
	tfApply = []string{"apply", "-auto-approve", "-input=false", "-no-color"}
)

// floorDirs makes n dirs of the component under dir, each with its own
// input, for plain terraform to run in.
func floorDirs(dir string, n int) ([]string, error) {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(dir, fmt.Sprintf("u%05d", i))
		if err := os.MkdirAll(dirs[i], 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "main.tf"), []byte(costComponent), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "terraform.tfvars.json"), fmt.Appendf(nil, `{"name": "u%d"}`, i), 0o644); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// floorPass runs plain terraform's cmds in each of dirs, p dirs at a
// time, and measures the pass: terraform's floor. With shared, each
// terraform gets the GOMAXPROCS a Run gives it (the cores over the
// processes running, rounded up): the floor of a runtime sized as the
// SDK sizes it, against which the SDK's own cost shows.
func (e *env) floorPass(ctx context.Context, dirs []string, p int, shared bool, cmds ...[]string) (spent, error) {
	environ := append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	if shared {
		running := max(1, min(p, len(dirs)))
		environ = append(environ, "GOMAXPROCS="+strconv.Itoa((runtime.GOMAXPROCS(0)+running-1)/running))
	}
	c0, t0 := childCPU(), time.Now()
	err := parallel(len(dirs), p, func(i int) error {
		for _, c := range cmds {
			cmd := exec.CommandContext(ctx, e.tf, c...)
			cmd.Dir = dirs[i]
			cmd.Env = environ
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("terraform %s in %s: %w: %s", c[0], dirs[i], err, b)
			}
		}
		return nil
	})
	return spent{time.Since(t0), childCPU() - c0}, err
}

// floorShaped is floorPass over dirs, with rootFirst the wide DAG's
// order: the root's dir alone, then the others p at a time, as a script
// running plain terraform in dependency order would (its dependents
// cannot start before it is applied). Without it, the wide DAG's floor
// would be the flat one, which no tool honouring the dependency reaches.
func (e *env) floorShaped(ctx context.Context, dirs []string, p int, rootFirst, shared bool, cmds ...[]string) (spent, error) {
	if !rootFirst || len(dirs) < 2 {
		return e.floorPass(ctx, dirs, p, shared, cmds...)
	}
	root, err := e.floorPass(ctx, dirs[:1], 1, shared, cmds...)
	if err != nil {
		return root, err
	}
	rest, err := e.floorPass(ctx, dirs[1:], p, shared, cmds...)
	return spent{root.wall + rest.wall, root.cpu + rest.cpu}, err
}

// parallel calls f(0..n-1), p at a time, and joins their errors.
func parallel(n, p int, f func(i int) error) error {
	sem := make(chan struct{}, p)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// queueSampleUnits is how many units one sample of the queue rows runs
// through the queue in all.
const queueSampleUnits = 400_000

// costQueue runs the queue over each count of independent units with a
// callback that does nothing, and compares CPU per unit with the first.
func costQueue(counts []int) ([]costRow, error) {
	var rows []costRow
	var base time.Duration
	for k, n := range counts {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("stack-%03d/component/instance-%06d", i%97, i)
		}
		g, err := queue.New(ids, make([][]string, n))
		if err != nil {
			return rows, err
		}
		// One sample runs the queue over at least 400,000 units in all
		// (40 Runs of 10,000, 10 of 40,000), after a collection, so that
		// a few milliseconds of a neighbour's load or of the garbage an
		// earlier section left do not decide a ratio of microseconds; the
		// best of three samples: neighbours' load shows as CPU too
		// (cache, frequency).
		runs := max(1, queueSampleUnits/n)
		var per time.Duration
		for range 3 {
			runtime.GC()
			c0 := selfCPU()
			for range runs {
				g.Run(context.Background(), nil, queue.Policy{Parallelism: 16}, nil, func(context.Context, int) error { return nil }, nil)
			}
			if c := (selfCPU() - c0) / time.Duration(n*runs); per == 0 || c < per {
				per = c
			}
		}
		row := costRow{fmt.Sprintf("queue, %d units, stub engine", n), fmt.Sprintf("CPU per unit (best of 3 samples of %d Runs)", runs), fmt.Sprintf("%.2f us", float64(per)/1e3), "", "", ""}
		if k == 0 {
			base = per
		} else {
			r := ratioF(per, base)
			row.ratio, row.target, row.met = fmt.Sprintf("%.2fx %d units", r, counts[0]), "<= 1.3x", met(r, 1.3)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// costIdle applies costIdleUnits units once, then times the same
// skip-unchanged Run beside no extra process and beside e.o.costIdle
// sleeping ones.
func (e *env) costIdle(ctx context.Context, dir string) ([]costRow, error) {
	src := filepath.Join(dir, "component")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(costComponent), 0o644); err != nil {
		return nil, err
	}
	wds, err := workdir.New(filepath.Join(dir, "workdirs"))
	if err != nil {
		return nil, err
	}
	r, err := runner.New(runner.WithWorkdirs(wds), runner.WithTerraform(e.tf), runner.WithParallelism(e.o.costPar), runner.WithSkipUnchanged())
	if err != nil {
		return nil, err
	}
	units := costUnits(src, e.o.costIdleUnits, false)
	fmt.Fprintf(e.log, "bench: cost: idle: applying %d units once...\n", len(units))
	if _, err := r.Run(ctx, runner.Apply, units...); err != nil {
		return nil, err
	}
	// The best of three: on a loaded machine one Run's wall time says
	// more about the neighbours than about the Run.
	skipRun := func() (wall, cpu time.Duration, err error) {
		for range 3 {
			c0, t0 := selfCPU(), time.Now()
			if _, err := r.Run(ctx, runner.Apply, units...); err != nil {
				return 0, 0, err
			}
			w, c := time.Since(t0), selfCPU()-c0
			if wall == 0 || w < wall {
				wall = w
			}
			if cpu == 0 || c < cpu {
				cpu = c
			}
		}
		return wall, cpu, nil
	}
	wall0, cpu0, err := skipRun()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.log, "bench: cost: idle: starting %d sleeping processes...\n", e.o.costIdle)
	stop, err := idleProcesses(e.o.costIdle)
	defer stop()
	if err != nil {
		return nil, err
	}
	wall1, cpu1, err := skipRun()
	if err != nil {
		return nil, err
	}
	scen := fmt.Sprintf("skip-unchanged Run, %d units", len(units))
	r1 := ratioF(wall1, wall0)
	return []costRow{
		{scen, "beside no idle process: wall, SDK CPU (best of 3)", secs(wall0) + ", " + secs(cpu0), "", "", ""},
		{scen, fmt.Sprintf("beside %d idle processes: wall, SDK CPU (best of 3)", e.o.costIdle), secs(wall1) + ", " + secs(cpu1),
			fmt.Sprintf("%.2fx wall, %.2fx CPU", r1, ratioF(cpu1, cpu0)), "<= 1.5x", met(r1, 1.5)},
	}, nil
}

// idleProcesses starts n sleeping processes in one process group and
// returns what ends them (and waits for them).
func idleProcesses(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	pgid := 0
	stop = func() {
		if pgid != 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sleep", "3600")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := c.Start(); err != nil {
			return stop, err
		}
		if pgid == 0 {
			pgid = c.Process.Pid
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// costAffected times runner.Affected over each count of units spread
// over 12 components, each calling a local module, and compares the
// largest with the smallest (best of ten each: a loaded machine's noise
// is larger than the difference measured).
func costAffected(dir string, counts []int) ([]costRow, error) {
	const comps = 12
	var srcs []string
	for c := range comps {
		src := filepath.Join(dir, fmt.Sprintf("c%02d", c))
		for name, body := range map[string]string{
			"main.tf":            costComponent + "module \"m\" {\n  source = \"./modules/m\"\n}\n",
			"modules/m/main.tf":  "variable \"x\" {\n  default = 1\n}\n",
			"modules/m/extra.tf": fmt.Sprintf("output \"c\" {\n  value = %d\n}\n", c),
		} {
			p := filepath.Join(src, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return nil, err
			}
		}
		srcs = append(srcs, src)
	}
	changed := filepath.Join(srcs[3], "modules", "m", "main.tf")
	var rows []costRow
	var first time.Duration
	for k, n := range counts {
		units := make([]runner.Unit, n)
		for i := range units {
			units[i] = runner.Unit{Workdir: workdir.Spec{Stack: "bench", Instance: fmt.Sprintf("u%06d", i), Source: srcs[i%comps]}}
		}
		best := time.Duration(0)
		hits := 0
		for range 10 {
			t0 := time.Now()
			ids, err := runner.Affected(units, dir, changed)
			d := time.Since(t0)
			if err != nil {
				return rows, err
			}
			hits = len(ids)
			if best == 0 || d < best {
				best = d
			}
		}
		row := costRow{fmt.Sprintf("Affected, %d units of %d components", n, comps), fmt.Sprintf("best of 10 (%d affected)", hits), millis(best), "", "", ""}
		if k == 0 {
			first = best
		} else {
			r := ratioF(best, first)
			row.ratio, row.target, row.met = fmt.Sprintf("%.2fx %d units", r, counts[0]), "<= 3x", met(r, 3)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// costSourceOnce prepares e.o.costInstances instances of one component
// of e.o.costFiles files, then measures what a dry run of a fresh
// Runner (a fresh process's memory) over all of them reads.
func (e *env) costSourceOnce(ctx context.Context, dir string) ([]costRow, error) {
	src := filepath.Join(dir, "component")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(costComponent), 0o644); err != nil {
		return nil, err
	}
	size := int64(len(costComponent))
	body := []byte(strings.Repeat("template line\n", 73)) // about 1 KiB
	// With main.tf, -cost-files files in all.
	for i := range e.o.costFiles - 1 {
		p := filepath.Join(src, "templates", fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%05d.tpl", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return nil, err
		}
		size += int64(len(body))
	}
	units := costUnits(src, e.o.costInstances, false)
	root := filepath.Join(dir, "workdirs")
	// stamps is what each instance's own record of its workdir weighs
	// (HOME/.tfisolate/stamp.json, which lists every file): a refresh
	// reads it once per instance, whatever the source costs.
	stamps := func(wds *workdir.Manager) (n int64) {
		for _, u := range units {
			home, _ := wds.Home(u.Workdir.Stack, u.Workdir.Instance)
			if fi, err := os.Stat(filepath.Join(home, ".tfisolate", "stamp.json")); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	var own int64
	pass := func(what string, units []runner.Unit) (time.Duration, int64, error) {
		wds, err := workdir.New(root)
		if err != nil {
			return 0, 0, err
		}
		r, err := runner.New(runner.WithWorkdirs(wds), runner.WithTerraform(e.tf), runner.WithSkipUnchanged())
		if err != nil {
			return 0, 0, err
		}
		if _, err := r.Binary(ctx); err != nil {
			return 0, 0, err
		}
		fmt.Fprintf(e.log, "bench: cost: %d instances of a %d-file component: %s...\n", len(units), e.o.costFiles, what)
		rc0, t0 := readChars(), time.Now()
		_, err = r.DryRun(ctx, runner.Apply, units)
		wall, read := time.Since(t0), readChars()-rc0
		own = stamps(wds)
		return wall, read, err
	}
	coldWall, coldRead, err := pass("cold (materialize every workdir)", units)
	if err != nil {
		return nil, err
	}
	// Digests are remembered only for files changed well before they
	// were read; the cold pass took longer than that window.
	warmWall, warmRead, err := pass("unchanged", units)
	if err != nil {
		return nil, err
	}
	rehash := slices.Clone(units)
	for i := range rehash {
		rehash[i].Workdir.Rehash = true
	}
	fullWall, fullRead, err := pass("unchanged, every file hashed again (Spec.Rehash)", rehash)
	if err != nil {
		return nil, err
	}
	scen := fmt.Sprintf("%d instances of one %d-file component (%s)", len(units), e.o.costFiles, mib(size))
	per := func(d time.Duration) string { return millis(d / time.Duration(len(units))) }
	r := float64(warmRead-own) / float64(size)
	return []costRow{
		{scen, "cold dry run: wall per instance, bytes read", fmt.Sprintf("%s, %s", per(coldWall), mib(coldRead)), "", "", ""},
		{scen, fmt.Sprintf("unchanged dry run: wall per instance, bytes read (%s of them the instances' own stamps)", mib(own)),
			fmt.Sprintf("%s, %s", per(warmWall), mib(warmRead)),
			fmt.Sprintf("source read %.2fx", r), "once (< 2x)", met(r, 2)},
		{scen, "the same with Spec.Rehash: wall per instance, bytes read", fmt.Sprintf("%s, %s", per(fullWall), mib(fullRead)),
			fmt.Sprintf("source read %.2fx; %.2fx the unchanged wall", float64(fullRead-own)/float64(size), ratioF(fullWall, warmWall)), "", ""},
	}, nil
}

// readChars is this process's rchar (/proc/self/io), 0 where there is
// none.
func readChars() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// watchHeap samples this process's live heap every 10 ms from now on; the
// function it returns stops the sampling and gives the highest live heap
// seen above the one at the start (after a collection), in bytes: what a
// Run holds at its peak, the SDK's own memory (terraform's is in its own
// processes).
func watchHeap() (stop func() int64) {
	runtime.GC()
	base := liveHeap()
	var peak atomic.Int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if h := liveHeap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return max(peak.Load()-base, 0)
	}
}

// liveHeap is the heap's bytes in live and not yet swept objects.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func msDecimal(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func kib(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/1024) }
