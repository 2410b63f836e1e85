//go:build unix

package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGenerateGetsOutputsInEveryCommand: app generates its tfvars from
// vpc's vpc_id output. In every command (Plan, SavePlan then ApplyPlan,
// an Apply that skips both as unchanged, Destroy, which runs app first)
// its Generate gets that output, so the dependent is planned, applied
// and destroyed with the real value, and ApplyPlan does not find the
// saved plan stale.
func TestGenerateGetsOutputsInEveryCommand(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	got := map[string]string{} // command -> the vpc_id app's Generate got
	var cmd string
	units := []Unit{
		{ID: "vpc", Workdir: workdirSpec("plat-ue2-dev", "vpc", w.component(t, "vpc", vpcComponent), nil)},
		{ID: "app", DependsOn: []string{"vpc"}, Workdir: workdirSpec("plat-ue2-dev", "app", w.component(t, "app", appComponent), nil),
			Generate: func(ctx context.Context, deps map[string]Result) (map[string][]byte, error) {
				id, ok := deps["vpc"].Outputs["vpc_id"]
				if !ok {
					return nil, fmt.Errorf("no vpc_id output from vpc: %+v", deps["vpc"])
				}
				mu.Lock()
				got[cmd] = string(id.Value)
				mu.Unlock()
				return map[string][]byte{"vpc.auto.tfvars.json": []byte(`{"vpc_id":` + string(id.Value) + `}`)}, nil
			}},
	}
	r := w.runner(t, WithSkipUnchanged())
	run := func(c Command) *Report {
		t.Helper()
		cmd = c.String()
		rep, err := r.Run(testCtx(t), c, units...)
		require.NoError(t, err, "%s", c)
		require.Equal(t, `"vpc-0abc1234"`, got[cmd], "%s: app's Generate got vpc's output", c)
		return rep
	}
	run(Apply)
	rep := run(Plan)
	for _, res := range rep.Results {
		require.False(t, res.HasChanges, "%s: planned with the real value, nothing changes", res.Unit)
	}
	run(SavePlan)
	run(ApplyPlan)
	run(Apply) // records the inputs the next Apply compares
	rep = run(Apply)
	for _, res := range rep.Results {
		require.True(t, res.Unchanged, "%s skipped as unchanged", res.Unit)
	}
	run(Destroy)
}

// TestPlanDependencyNotAppliedIsAnError: in one Run of SavePlan (or
// Plan), a dependency that is planned but has never been applied has no
// outputs yet. Its dependent fails with ErrNotApplied naming it and
// saying its outputs are not known until it is applied, before its
// Generate is called; it is never planned against an empty outputs map.
// The dependency itself is planned.
func TestPlanDependencyNotAppliedIsAnError(t *testing.T) {
	w := newWorld(t)
	var generated sync.Map
	units := []Unit{
		{ID: "vpc", Workdir: workdirSpec("plat-ue2-dev", "vpc", w.component(t, "vpc", vpcComponent), nil)},
		{ID: "app", DependsOn: []string{"vpc"}, Workdir: workdirSpec("plat-ue2-dev", "app", w.component(t, "app", appComponent), nil),
			Generate: func(ctx context.Context, deps map[string]Result) (map[string][]byte, error) {
				generated.Store("app", deps["vpc"].Outputs)
				return map[string][]byte{"vpc.auto.tfvars.json": []byte(`{"vpc_id": "none"}`)}, nil
			}},
	}
	r := w.runner(t)
	for _, cmd := range []Command{SavePlan, Plan} {
		rep, err := r.Run(testCtx(t), cmd, units...)
		require.ErrorIs(t, err, ErrNotApplied, "%s", cmd)
		vpc, _ := rep.Result("vpc")
		require.Equal(t, Succeeded, vpc.Status, "%s: the dependency is planned", cmd)
		app, _ := rep.Result("app")
		require.Equal(t, Failed, app.Status, "%s", cmd)
		require.ErrorIs(t, app.Err, ErrNotApplied, "%s", cmd)
		require.ErrorContains(t, app.Err, "dependency vpc", "%s", cmd)
		require.ErrorContains(t, app.Err, "not known until it is applied", "%s", cmd)
		got, called := generated.Load("app")
		require.False(t, called, "%s: app's Generate was called with %v", cmd, got)
	}
}
