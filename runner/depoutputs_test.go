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
