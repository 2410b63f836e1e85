package main

import (
	"fmt"
	"slices"
	"time"
)

// unitCost is what one unit's terraform command costs when it runs alone
// in a prepared workdir: its wall time and the CPU time (user+system) of
// terraform and everything it started. Each is the median of repeated
// runs, taken on its own.
type unitCost struct {
	wall, cpu time.Duration
	runs      int
}

// costOf takes the medians of samples of wall and CPU time.
func costOf(walls, cpus []time.Duration) unitCost {
	return unitCost{wall: median(walls), cpu: median(cpus), runs: len(walls)}
}

// floorTime is terraform's own floor for n units run p at once on cores
// CPUs, each costing c when alone: the larger of the latency bound
// (ceil(n/p) waves of one unit's wall time) and the CPU bound (the units'
// CPU time spread over every core). No tool that runs terraform can beat
// either: the first is terraform's own wall time with nothing shared, the
// second is the CPU terraform itself needs.
type floorTime struct {
	n, p, cores int
	unit        unitCost
	latency     time.Duration // ceil(n/p) x unit wall
	cpu         time.Duration // n x unit CPU / cores
}

// newFloor computes the floor. n, p and cores below 1 count as 1.
func newFloor(n, p, cores int, c unitCost) floorTime {
	n, p, cores = max(n, 1), max(p, 1), max(cores, 1)
	waves := (n + p - 1) / p
	return floorTime{
		n: n, p: p, cores: cores, unit: c,
		latency: time.Duration(waves) * c.wall,
		cpu:     time.Duration(int64(n) * int64(c.cpu) / int64(cores)),
	}
}

// value is the floor itself.
func (f floorTime) value() time.Duration { return max(f.latency, f.cpu) }

// withWait is the floor once it is known that each unit's wait on its
// cloud (one unit's wall time alone less its CPU time, when that is
// more) comes after its CPU work: no schedule ends before every unit's
// CPU time is spent (the CPU bound) and then the unit that spent it last
// has waited. It is the floor that no scheduling, a core gate included,
// can beat when the CPU bound sets the floor; it equals the floor for a
// unit that does not wait.
func (f floorTime) withWait() time.Duration {
	return max(f.latency, f.cpu+max(f.unit.wall-f.unit.cpu, 0))
}

// cpuNeeded is the CPU time the n units need when each runs alone.
func (f floorTime) cpuNeeded() time.Duration { return time.Duration(f.n) * f.unit.cpu }

// bound names the bound that sets the floor.
func (f floorTime) bound() string {
	if f.cpu > f.latency {
		return "CPU"
	}
	return "latency"
}

// median is the middle of ds (the mean of the two middle values for an
// even count), 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	d := slices.Clone(ds)
	slices.Sort(d)
	mid := d[len(d)/2]
	if len(d)%2 == 0 {
		mid = (d[len(d)/2-1] + mid) / 2
	}
	return mid
}

// ratioOf is a/b, and whether there is one (both measured, b > 0).
func ratioOf(a, b time.Duration) (float64, bool) {
	if a <= 0 || b <= 0 {
		return 0, false
	}
	return float64(a) / float64(b), true
}

// goal is one of the project's speed goals: a measured ratio and the
// largest ratio that meets it.
type goal struct {
	what     string  // e.g. "warm re-apply vs floor"
	scenario string  // which scenario and pass it was measured in
	ratio    float64 // measured
	measured bool    // false: a side of the ratio is missing (skipped, failed)
	target   float64 // the ratio must be at most this
	why      string  // why it is not measured, or what to keep in mind when it is
	// cpu is tfisolate's CPU time against the baseline's, and floorCPU
	// the floor's CPU time (N x c) against the baseline's: what terraform
	// alone would reach on CPU. Both hold up on a loaded machine, where
	// wall times do not; 0 when unknown.
	cpu, floorCPU float64
}

// newGoal measures a against b for a goal of at most target.
func newGoal(what, scenario string, a, b time.Duration, target float64) goal {
	r, ok := ratioOf(a, b)
	return goal{what: what, scenario: scenario, ratio: r, measured: ok, target: target}
}

// verdict is PASS when the ratio meets the target, MISS when it does not,
// and n/a when it could not be measured.
func (g goal) verdict() string {
	switch {
	case !g.measured:
		return "n/a"
	case g.ratio <= g.target:
		return "PASS"
	}
	return "MISS"
}

// missed reports a measured goal that was not met.
func (g goal) missed() bool { return g.verdict() == "MISS" }

// row is the goal as a table row: goal, scenario, measured, target,
// verdict, CPU ratio, the floor's CPU ratio.
func (g goal) row() []string {
	measured := "n/a"
	if g.measured {
		measured = fmtRatio(g.ratio)
	}
	if g.why != "" {
		measured += " (" + g.why + ")"
	}
	return []string{g.what, g.scenario, measured, "<= " + fmtRatio(g.target), g.verdict(), optRatio(g.cpu), optRatio(g.floorCPU)}
}

// optRatio formats r, or "n/a" for 0 (unknown).
func optRatio(r float64) string {
	if r <= 0 {
		return "n/a"
	}
	return fmtRatio(r)
}

// fmtRatio formats a ratio as "1.23x".
func fmtRatio(r float64) string { return fmt.Sprintf("%.2fx", r) }
