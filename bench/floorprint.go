package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// floorScenario is one scenario of the floor section.
type floorScenario struct {
	key        string // as -skip takes it
	n, p       int
	latency    time.Duration
	padding    int64
	warm       bool // also an unchanged re-apply pass
	workaround bool // has a workaround row (it starts every instance at once)
}

// floorScenarios are the scenarios the options leave in, in order.
func (o *options) floorScenarios() []floorScenario {
	if o.skipped(nameFloor) {
		return nil
	}
	var out []floorScenario
	for _, s := range []floorScenario{
		{key: nameBase, n: o.n, p: o.parallelism, latency: o.latency, padding: o.padding, warm: true, workaround: true},
		{key: nameLarge, n: o.largeN, p: o.largeN, latency: 0, padding: o.largePadding, warm: true, workaround: true},
		{key: nameWide, n: o.wideN, p: o.widePar, latency: o.latency, padding: o.padding},
	} {
		if !o.skipped(s.key) {
			out = append(out, s)
		}
	}
	return out
}

// Passes of the floor section.
const (
	passCold = "cold apply"
	passWarm = "warm re-apply"
)

// peerRow is one row of a floor-section table.
type peerRow struct {
	label     string
	n, ok     int
	wall      time.Duration
	tfCPU     time.Duration // terraform or tofu and everything they started
	sdkCPU    time.Duration // this process: for tfisolate, the SDK
	downloads int
	inits     int    // terraform/tofu init processes
	skipped   string // why the row did not run
	errs      map[string]int
	split     *phaseSplit // tfisolate: where the time went
}

// failed says why the row's time is no measure: it did not run, or not
// every instance succeeded; "" when it is one.
func (r *peerRow) failed() string {
	switch {
	case r == nil:
		return "not run"
	case r.skipped != "":
		return "skipped"
	case r.ok < r.n:
		return fmt.Sprintf("%d/%d failed", r.n-r.ok, r.n)
	}
	return ""
}

// passResult is one pass of one scenario.
type passResult struct {
	pass                        string
	floor                       floorTime
	workaround, tfisolate, tofu *peerRow
	// gated is tfisolate with runner.WithCoreGate (issue 16 part 2), nil
	// when not measured.
	gated *peerRow
}

// scenarioResult is what a scenario measured, for the goals at the end.
type scenarioResult struct {
	s      floorScenario
	title  string
	passes []passResult
}

// phaseSplit is where tfisolate's units spent their time, as means per
// unit: the spans between the runner's events, and the lifetimes of the
// unit's terraform processes (from the timing wrapper).
type phaseSplit struct {
	units int
	// From the runner's events: queued (PhaseQueued to PhasePrepare),
	// prepare (PhasePrepare to PhaseInit: instance lock, workdir,
	// modules, provider setup), init (PhaseInit to the command's phase:
	// the init record check and terraform init when it runs), command
	// (the command's phase to PhaseDone: terraform apply, outputs, the
	// instance's journal and lock release).
	queued, prepare, init, command time.Duration
	// inTF is the unit's terraform processes' lifetimes, outside the
	// rest of its duration (the wrapper's measured cost taken off);
	// valid only when tied.
	inTF, outside time.Duration
	// before and after are the parts of outside before the unit's first
	// terraform process started (from PhasePrepare) and after its last
	// one ended (to PhaseDone: outputs, journal, leftover-process check,
	// workdir lock release); valid only when tied.
	before, after time.Duration
	procs         float64 // terraform processes per unit
	tied          bool    // every process was told to its unit
}

// Goal targets, as the project states them.
const (
	goalColdVsFloor      = 1.15 // cold apply (any N, p) against its floor
	goalWarmVsFloor      = 1.25 // unchanged re-apply against its floor
	goalWarmVsWorkaround = 0.40 // unchanged re-apply against the workaround
	goalVsTofu           = 0.80 // either pass against OpenTofu
	floorRowLabel        = "floor (terraform alone)"
)

// goalsOf lists the goals each scenario's passes measure.
func goalsOf(results []scenarioResult) []goal {
	var gs []goal
	for _, sr := range results {
		for _, pr := range sr.passes {
			where := sr.s.key + ", " + pr.pass
			t := pr.tfisolate
			add := func(what string, base *peerRow, baseWall time.Duration, target float64) {
				if t == pr.gated {
					what += " (core gate)"
				}
				g := newGoal(what, where, wallOf(t), baseWall, target)
				baseCPU := pr.floor.cpuNeeded()
				if base != nil {
					baseCPU = cpuOf(base)
				}
				if r, ok := ratioOf(cpuOf(t), baseCPU); ok {
					g.cpu = r
				}
				if r, ok := ratioOf(pr.floor.cpuNeeded(), baseCPU); ok {
					g.floorCPU = r
				}
				switch {
				case t.failed() != "":
					g.measured, g.why = false, "tfisolate "+t.failed()
				case base != nil && base.failed() != "":
					if base.skipped != "" || base.ok == 0 {
						g.measured, g.why = false, base.label+" "+base.failed()
					} else {
						// The baseline's time still counts, but it did
						// less than all the work.
						g.why = base.label + " " + base.failed()
					}
				}
				gs = append(gs, g)
			}
			if pr.pass == passWarm {
				add("warm re-apply vs floor", nil, pr.floor.value(), goalWarmVsFloor)
				if pr.workaround != nil {
					add("warm re-apply vs workaround", pr.workaround, wallOf(pr.workaround), goalWarmVsWorkaround)
				}
			} else {
				add("cold apply vs floor", nil, pr.floor.value(), goalColdVsFloor)
			}
			add(pr.pass+" vs OpenTofu", pr.tofu, wallOf(pr.tofu), goalVsTofu)
			if pr.gated != nil {
				t = pr.gated
				if pr.pass == passWarm {
					add("warm re-apply vs floor", nil, pr.floor.value(), goalWarmVsFloor)
				} else {
					add("cold apply vs floor", nil, pr.floor.value(), goalColdVsFloor)
				}
			}
		}
	}
	return gs
}

// cpuOf is r's CPU time (engine and SDK), 0 when r did not run.
func cpuOf(r *peerRow) time.Duration {
	if r == nil || r.skipped != "" {
		return 0
	}
	return r.tfCPU + r.sdkCPU
}

// wallOf is r's wall time, 0 when r did not run.
func wallOf(r *peerRow) time.Duration {
	if r == nil || r.skipped != "" {
		return 0
	}
	return r.wall
}

// printPass prints one pass's table and the failures under it.
func printPass(out io.Writer, pr passResult) {
	f := pr.floor
	fmt.Fprintf(out, "\n#### %s\n\n", pr.pass)
	fmt.Fprintf(out, "Floor = max(ceil(%d/%d) x %s, %d x %s / %d cores) = max(%s, %s) = **%s** (%s bound).\n\n",
		f.n, f.p, secs(f.unit.wall), f.n, secs(f.unit.cpu), f.cores, secs(f.latency), secs(f.cpu), secs(f.value()), f.bound())
	floorInits := f.n
	if pr.pass == passWarm {
		floorInits = 0
	}
	ratioCell := func(w time.Duration, base *peerRow) string {
		if base == nil {
			return "-"
		}
		return ratio(w, wallOf(base))
	}
	t := [][]string{{"approach", "succeeded", "wall", "vs floor", "vs workaround", "vs OpenTofu", "terraform CPU", "SDK CPU", "cores used", "inits", "downloads"}}
	t = append(t, []string{floorRowLabel, "-", secs(f.value()), "1.00x", ratioCell(f.value(), pr.workaround), ratioCell(f.value(), pr.tofu),
		secs(f.cpuNeeded()), "-", coresUsed(f.cpuNeeded(), f.value()), fmt.Sprint(floorInits), "0"})
	var notes []string
	for _, r := range []*peerRow{pr.workaround, pr.tfisolate, pr.gated, pr.tofu} {
		if r == nil {
			continue
		}
		if r.skipped != "" {
			t = append(t, []string{r.label, "skipped", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"})
			continue
		}
		t = append(t, []string{
			r.label,
			fmt.Sprintf("%d/%d", r.ok, r.n),
			secs(r.wall),
			ratio(r.wall, f.value()),
			ratioCell(r.wall, pr.workaround),
			ratioCell(r.wall, pr.tofu),
			secs(r.tfCPU),
			secs(r.sdkCPU),
			coresUsed(r.tfCPU+r.sdkCPU, r.wall),
			fmt.Sprint(r.inits),
			fmt.Sprint(r.downloads),
		})
		if n := failureNote(r); n != "" {
			notes = append(notes, n)
		}
	}
	writeTable(out, t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if len(notes) > 0 {
		fmt.Fprintf(out, "\nFailures (the error lines of each failed instance):\n\n%s\n", strings.Join(notes, "\n"))
	}
}

// failureNote is "- label: k failed: counts x messages", or "" for none.
func failureNote(r *peerRow) string {
	if len(r.errs) == 0 {
		return ""
	}
	msgs := make([]string, 0, len(r.errs))
	for m := range r.errs {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool {
		return r.errs[msgs[i]] > r.errs[msgs[j]] || r.errs[msgs[i]] == r.errs[msgs[j]] && msgs[i] < msgs[j]
	})
	var parts []string
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("%dx `%s`", r.errs[m], strings.ReplaceAll(m, "`", "'")))
	}
	return fmt.Sprintf("- %s: %d failed: %s", r.label, r.n-r.ok, strings.Join(parts, "; "))
}

// printGoals prints the goals table and, for every pass in which
// tfisolate misses a goal, where its time went.
func printGoals(out io.Writer, results []scenarioResult, wrapperCost time.Duration) {
	gs := goalsOf(results)
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(out, "\n### Goals\n\n%s\n", goalsIntro)
	t := [][]string{{"goal", "scenario, pass", "measured", "target", "verdict", "CPU ratio", "terraform alone's CPU ratio"}}
	missed := map[string]bool{}
	for _, g := range gs {
		t = append(t, g.row())
		if g.missed() {
			missed[g.scenario] = true
		}
	}
	writeTable(out, t, 2, 3, 5, 6)
	if len(missed) == 0 {
		return
	}
	fmt.Fprintf(out, "\n### Where tfisolate's time goes where it misses\n\n")
	t = [][]string{{"scenario, pass", "wall", "floor", "floor with the wait", "bound", "terraform CPU", "SDK CPU", "N x c", "CPU / (N x c)", "cores used",
		"per unit: queued", "prepare", "init", "command", "in terraform", "outside terraform", "before first", "after last", "floor L", "terraform processes"}}
	var lines []string
	for _, sr := range results {
		for _, pr := range sr.passes {
			where := sr.s.key + ", " + pr.pass
			r := pr.tfisolate
			if !missed[where] || r == nil || r.skipped != "" {
				continue
			}
			f := pr.floor
			used := r.tfCPU + r.sdkCPU
			row := []string{where, secs(r.wall), secs(f.value()), secs(f.withWait()) + " (" + ratio(r.wall, f.withWait()) + ")", f.bound(), secs(r.tfCPU), secs(r.sdkCPU), secs(f.cpuNeeded()),
				ratio(used, f.cpuNeeded()), coresUsed(used, r.wall)}
			if sp := r.split; sp != nil {
				inTF, outside, before, after := "n/a", "n/a", "n/a", "n/a"
				if sp.tied {
					inTF, outside, before, after = short(sp.inTF), short(sp.outside), short(sp.before), short(sp.after)
				}
				row = append(row, short(sp.queued), short(sp.prepare), short(sp.init), short(sp.command), inTF, outside, before, after,
					secs(f.unit.wall), fmt.Sprintf("%.1f", sp.procs))
			} else {
				row = append(row, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", secs(f.unit.wall), "n/a")
			}
			t = append(t, row)
			lines = append(lines, "- "+where+": "+explain(pr))
		}
	}
	writeTable(out, t, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
	fmt.Fprintf(out, "\n%s\n", strings.Join(lines, "\n"))
	fmt.Fprintf(out, `
How to read it: *terraform CPU* is what tfisolate's terraform processes
(and their providers and provisioners) used, *SDK CPU* the bench process
(the runner, workdirs, cache); their sum against *N x c*, what the same
number of units needs when each runs alone, says whether more work was
done than terraform alone does. *cores used* is that CPU over the wall
time: below the machine's core count, the run got less than the whole
machine (other load, or ramps at the start and end with fewer processes
than cores). The per-unit columns are means:
*queued* waits for a parallelism slot, *prepare* is PhasePrepare to
PhaseInit (instance lock, workdir copy and check, modules, provider setup
from the cache and the lock file), *init* is PhaseInit to PhaseApply (the
init record check, and terraform init where it ran), *command* is
PhaseApply to PhaseDone (terraform apply with -json, outputs, the
instance's journal and lock release). *in terraform* is the unit's
terraform processes' lifetimes, *outside terraform* the rest of the unit's
duration (the timing wrapper's cost, %s per process, taken off), of which
*before first* is PhasePrepare to the first terraform process and *after
last* the last process's end to PhaseDone. *floor L* is one unit's wall
time alone. *floor with the wait* adds to a CPU-bound floor one unit's
wait (L less its CPU time): each unit's wait on its cloud follows its
CPU work, so no schedule, however it orders the units, ends before all
of their CPU is spent and then the last one has waited; against it,
the ratio in brackets is what scheduling could still win.
`, millis(wrapperCost))
}

const goalsIntro = `Measured in this run, not asserted anywhere: *measured* is tfisolate's
wall time against the floor, the workaround or OpenTofu of the same pass,
and the verdict is on it. *CPU ratio* is tfisolate's CPU time (terraform
and SDK) against the same baseline's (for the floor: N x c), and
*terraform alone's CPU ratio* is N x c against the baseline's: a goal
whose target is below the latter cannot be met on CPU by any tool that
runs terraform, and on a loaded machine, where wall times stretch with
the cores a run gets, the CPU ratios are the steadier figures.
`

// explain says in one or two sentences where a pass's time went beyond
// its floor. Against a CPU bound, wall/floor is exactly (CPU used / N x c)
// x (cores / cores used): more work than terraform alone needs, or fewer
// cores than the machine has (other load, idle ramps). Against a latency
// bound it compares a unit's phases with one unit alone.
func explain(pr passResult) string {
	r, f := pr.tfisolate, pr.floor
	var b strings.Builder
	fmt.Fprintf(&b, "%s against a %s-bound floor of %s (%s).", secs(r.wall), f.bound(), secs(f.value()), ratio(r.wall, f.value()))
	used := r.tfCPU + r.sdkCPU
	switch {
	case used <= 0 || r.wall <= 0:
	case f.bound() == "CPU":
		fmt.Fprintf(&b, " = CPU factor %s (terraform %s + SDK %s against N x c = %s) x core factor %.2fx (%s of the %d cores used).",
			ratio(used, f.cpuNeeded()), secs(r.tfCPU), secs(r.sdkCPU), secs(f.cpuNeeded()),
			float64(f.cores)*float64(r.wall)/float64(used), coresUsed(used, r.wall), f.cores)
	default:
		fmt.Fprintf(&b, " CPU: terraform %s + SDK %s against N x c = %s (%s), %s of the %d cores used (the latency bound assumes no unit ever waits for a core).",
			secs(r.tfCPU), secs(r.sdkCPU), secs(f.cpuNeeded()), ratio(used, f.cpuNeeded()), coresUsed(used, r.wall), f.cores)
	}
	if sp := r.split; sp != nil {
		fmt.Fprintf(&b, " A unit took %s on average (prepare %s, init %s, command %s", secs(sp.prepare+sp.init+sp.command),
			short(sp.prepare), short(sp.init), short(sp.command))
		if sp.tied {
			fmt.Fprintf(&b, "; %s of it outside terraform: %s before its first terraform process, %s after its last",
				short(sp.outside), short(sp.before), short(sp.after))
		}
		fmt.Fprintf(&b, ") against %s for terraform alone", secs(f.unit.wall))
		if sp.queued > 0 {
			fmt.Fprintf(&b, ", after %s queued", short(sp.queued))
		}
		b.WriteString(".")
	}
	return b.String()
}

// short formats d in milliseconds below a second, else in seconds.
func short(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return millis(d)
	}
	return secs(d)
}

// coresUsed is cpu/wall, the cores a run kept busy on average.
func coresUsed(cpu, wall time.Duration) string {
	if wall <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(cpu)/float64(wall))
}
