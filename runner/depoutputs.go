package runner

import (
	"context"
	"fmt"
)

// A unit's Generate gets its dependencies' outputs in every command, not
// only in those that produce them in dependency order (Apply, ApplyPlan
// and Output). Otherwise a Plan or SavePlan would plan every dependent
// against missing values, and a Destroy, which runs dependents first,
// would generate them a backend or variables from nothing and destroy
// the wrong thing or nothing at all.
//
// For the other commands the Run first reads the outputs of the units
// those Generates depend on, with an Output pass over them (and, for
// their own Generates, over what they depend on), in dependency order,
// before the command itself starts. Under Plan and SavePlan, a
// dependency planned in the same Run whose state holds none of the
// outputs its configuration declares has never been applied: its
// outputs are not known until it is, so its dependents fail with
// ErrNotApplied naming it rather than plan against an empty map (an
// empty map looks like a dependency without outputs, and a Generate
// would make files from nothing). Custom steps are left alone: their
// dependents get the steps' own results (Result.Data).

// outputsInOrder reports whether cmd, run in dependency order, leaves
// each unit's outputs in its Result before its dependents start.
func (rs *runState) outputsInOrder() bool {
	if rs.cmd.reverse || rs.opts.ignoreOrder {
		return false
	}
	switch rs.cmd.kind {
	case kindApply, kindApplyPlan, kindOutput, kindStep:
		return true
	}
	return false
}

// feedsGenerate marks every unit that a selected unit's Generate depends
// on, and, for their own Generates, what those depend on in turn.
func (rs *runState) feedsGenerate(sel []bool) []bool {
	feeds := make([]bool, len(rs.units))
	var mark func(i int)
	mark = func(i int) {
		for _, d := range rs.g.Deps(i) {
			if !feeds[d] {
				feeds[d] = true
				if rs.units[d].Generate != nil {
					mark(d)
				}
			}
		}
	}
	for i := range rs.units {
		if sel[i] && rs.units[i].Generate != nil {
			mark(i)
		}
	}
	return feeds
}

// unselectedFeeds marks the unselected units a selected unit's Generate
// depends on, and, for their own Generates, what those depend on in turn.
func (rs *runState) unselectedFeeds(sel []bool) []bool {
	feeds := make([]bool, len(rs.units))
	var mark func(d int)
	mark = func(d int) {
		if feeds[d] {
			return
		}
		feeds[d] = true
		if rs.units[d].Generate != nil {
			for _, dd := range rs.g.Deps(d) {
				mark(dd)
			}
		}
	}
	for i := range rs.units {
		if sel[i] && rs.units[i].Generate != nil {
			for _, d := range rs.g.Deps(i) {
				if !sel[d] {
					mark(d)
				}
			}
		}
	}
	return feeds
}

// readDependencyOutputs runs the Output pass when the command itself
// would not give a Generate its dependencies' outputs. Its results are
// kept for depResults; a unit whose outputs could not be read gives its
// dependents a Result with the error.
//
// A dependency outside the Run's selection (filters, WithIDs, a shard)
// counts as done and runs no command, so its outputs are read in every
// command, those that produce outputs in order included.
func (r *Runner) readDependencyOutputs(ctx context.Context, rs *runState, sel []bool) error {
	var feeds []bool
	if rs.outputsInOrder() {
		feeds = rs.unselectedFeeds(sel)
	} else {
		feeds = rs.feedsGenerate(sel)
	}
	need := false
	for _, f := range feeds {
		need = need || f
	}
	if !need {
		return nil
	}
	pre, err := r.newRunState(Output, rs.opts, rs.eng, rs.units, rs.g)
	if err != nil {
		return fmt.Errorf("read the outputs dependencies give to Generate: %w", err)
	}
	defer pre.close()
	pre.em = &emitter{} // the command's events are the Run's; this pass is silent
	pre.out = nil
	pre.ordered = true
	pre.outsideOutputs = make([]bool, len(sel))
	pre.plannedOutputs = make([]bool, len(sel))
	planning := (rs.cmd.kind == kindPlan || rs.cmd.kind == kindSavePlan) && !rs.cmd.reverse
	for i := range sel {
		pre.outsideOutputs[i] = !sel[i]
		pre.plannedOutputs[i] = sel[i] && planning
	}
	pre.run(ctx, feeds)
	rs.depOutputs = map[int]Result{}
	for i, f := range feeds {
		if f {
			rs.depOutputs[i] = pre.results[i]
		}
	}
	return nil
}
