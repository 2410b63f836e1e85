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
whose output every other unit's Generate reads. *dry run* is
Runner.DryRun over the same units: everything a Run does but terraform.
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

// costTerraform runs n units of real terraform, flat and as a wide DAG,
// cold, warm and skip-unchanged, beside terraform's own floor.
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
	fmt.Fprintf(e.log, "bench: cost: %s: floor cold...\n", scen)
	floorCold, floorWarm, err := e.costFloor(ctx, filepath.Join(dir, "floor"), n, p)
	if err != nil {
		return nil, err
	}
	rows := []costRow{
		{scen, "floor cold (init + apply): wall, CPU", floorCold.String(), "", "", ""},
		{scen, "floor warm (apply): wall, CPU", floorWarm.String(), "", "", ""},
	}
	for _, wide := range []bool{false, true} {
		shape := "flat"
		if wide {
			shape = "wide DAG"
		}
		wds, err := workdir.New(filepath.Join(dir, "workdirs-"+shape[:4]))
		if err != nil {
			return rows, err
		}
		units := costUnits(src, n, wide)
		newRunner := func(opts ...runner.Option) (*runner.Runner, error) {
			return runner.New(append([]runner.Option{runner.WithWorkdirs(wds), runner.WithTerraform(e.tf), runner.WithParallelism(p)}, opts...)...)
		}
		r, err := newRunner()
		if err != nil {
			return rows, err
		}
		if _, err := r.Binary(ctx); err != nil {
			return rows, err
		}
		var sdk []string // the SDK's own CPU and memory per unit, per pass
		timed := func(what string, r *runner.Runner) (spent, string, error) {
			fmt.Fprintf(e.log, "bench: cost: %s, %s: %s...\n", scen, shape, what)
			heap := watchHeap()
			s0, c0, t0 := selfCPU(), childCPU(), time.Now()
			rep, err := r.Run(ctx, runner.Apply, units...)
			self := selfCPU() - s0
			wall := spent{time.Since(t0), self + childCPU() - c0}
			grew := heap()
			sdk = append(sdk, fmt.Sprintf("%s %s, %s", what, msDecimal(self/time.Duration(n)), kib(grew/int64(n))))
			if rep == nil {
				return wall, "", err
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
			return wall, fmt.Sprintf("%d/%d succeeded, %d skipped as unchanged", ok, len(rep.Results), skipped), nil
		}
		cold, coldOK, err := timed("cold", r)
		if err != nil && coldOK == "" {
			return rows, err
		}
		warm, warmOK, err := timed("warm", r)
		if err != nil && warmOK == "" {
			return rows, err
		}
		t0 := time.Now()
		steps, err := r.DryRun(ctx, runner.Apply, units)
		dry := time.Since(t0)
		if err != nil {
			return rows, fmt.Errorf("dry run: %w", err)
		}
		rs, err := newRunner(runner.WithSkipUnchanged())
		if err != nil {
			return rows, err
		}
		skip, skipOK, err := timed("skip-unchanged", rs)
		if err != nil && skipOK == "" {
			return rows, err
		}
		rc, rw := ratioF(cold.wall, floorCold.wall), ratioF(warm.wall, floorWarm.wall)
		rows = append(rows,
			costRow{scen + ", " + shape, "cold Run (" + coldOK + "): wall, CPU", cold.String(),
				fmt.Sprintf("%.2fx floor cold (CPU %.2fx)", rc, ratioF(cold.cpu, floorCold.cpu)), "<= 1.1x", met(rc, 1.1)},
			costRow{scen + ", " + shape, "warm Run (" + warmOK + "): wall, CPU", warm.String(),
				fmt.Sprintf("%.2fx floor warm (CPU %.2fx)", rw, ratioF(warm.cpu, floorWarm.cpu)), "<= 1.1x", met(rw, 1.1)},
			costRow{scen + ", " + shape, "skip-unchanged Run (" + skipOK + "): wall, CPU", skip.String(),
				fmt.Sprintf("%.2fx floor warm", ratioF(skip.wall, floorWarm.wall)), "", ""},
			costRow{scen + ", " + shape, fmt.Sprintf("dry run (%d steps), per unit", len(steps)), millis(dry / time.Duration(n)), "", "", ""},
			costRow{scen + ", " + shape, "the SDK's own CPU per unit, and its peak live heap above the start over the units (cold, warm, skip-unchanged)", strings.Join(sdk, "; "), "", "", ""},
		)
	}
	return rows, ctx.Err()
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

// costFloor runs plain terraform in n pre-made dirs, p at a time: init +
// apply (cold), then apply again (warm).
func (e *env) costFloor(ctx context.Context, dir string, n, p int) (cold, warm spent, err error) {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(dir, fmt.Sprintf("u%05d", i))
		if err := os.MkdirAll(dirs[i], 0o755); err != nil {
			return cold, warm, err
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "main.tf"), []byte(costComponent), 0o644); err != nil {
			return cold, warm, err
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "terraform.tfvars.json"), fmt.Appendf(nil, `{"name": "u%d"}`, i), 0o644); err != nil {
			return cold, warm, err
		}
	}
	pass := func(cmds ...[]string) (spent, error) {
		c0, t0 := childCPU(), time.Now()
		err := parallel(n, p, func(i int) error {
			for _, c := range cmds {
				cmd := exec.CommandContext(ctx, e.tf, c...)
				cmd.Dir = dirs[i]
				cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
				if b, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("terraform %s in %s: %w: %s", c[0], dirs[i], err, b)
				}
			}
			return nil
		})
		return spent{time.Since(t0), childCPU() - c0}, err
	}
	if cold, err = pass([]string{"init", "-input=false", "-no-color"}, []string{"apply", "-auto-approve", "-input=false", "-no-color"}); err != nil {
		return cold, warm, err
	}
	warm, err = pass([]string{"apply", "-auto-approve", "-input=false", "-no-color"})
	return cold, warm, err
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
