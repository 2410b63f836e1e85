package runner

import (
	"fmt"
)

// FanOutPlan is a Run split for a CI matrix: waves to run one after the
// other, and within each wave jobs that may run at once on different
// machines, each naming the unit IDs it runs (with WithIDs). Its JSON
// form is
//
//	{"waves": [{"jobs": [["plat/vpc"]]},
//	           {"jobs": [["plat/app-01", "plat/app-02"], ["plat/app-03"]]}]}
//
// which a CI system can read as is: one matrix per wave (a GitHub
// Actions job with `strategy.matrix.units: ${{ fromJSON(...).waves[1].jobs }}`,
// a GitLab `parallel:matrix`), each job then calling
//
//	r.RunWith(ctx, runner.Apply, units, runner.WithIDs(ids...))
//
// A job's units depend only on units of earlier waves, so every job of a
// wave can start once the wave before it is done; a unit whose Generate
// reads a dependency that ran in another job (on another machine) gets
// its outputs from the state backend, read through a workdir of its own
// (see WithIDs).
type FanOutPlan struct {
	Waves []FanOutWave `json:"waves"`
}

// FanOutWave is one wave of a FanOutPlan.
type FanOutWave struct {
	// Jobs hold unit IDs, sorted; none is empty.
	Jobs [][]string `json:"jobs"`
}

// FanOut splits waves, as Order or OrderWith return them, into at most
// jobs jobs per wave, balanced by unit count (job sizes in a wave differ
// by one at most; a wave with fewer units than jobs gets one job per
// unit). Within a job the IDs keep the wave's order. The union of all
// jobs is every unit of waves exactly once. jobs must be at least 1.
func FanOut(waves [][]string, jobs int) (FanOutPlan, error) {
	if jobs < 1 {
		return FanOutPlan{}, fmt.Errorf("%w: FanOut jobs %d, want >= 1", ErrBadOption, jobs)
	}
	plan := FanOutPlan{Waves: make([]FanOutWave, 0, len(waves))}
	for _, ids := range waves {
		n := min(jobs, len(ids))
		w := FanOutWave{Jobs: make([][]string, 0, n)}
		for j, start := 0, 0; j < n; j++ {
			size := len(ids) / n
			if j < len(ids)%n {
				size++
			}
			w.Jobs = append(w.Jobs, append([]string(nil), ids[start:start+size]...))
			start += size
		}
		if len(w.Jobs) > 0 {
			plan.Waves = append(plan.Waves, w)
		}
	}
	return plan, nil
}
