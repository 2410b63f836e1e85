package runner

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResultSummary: Plan, SavePlan, Apply, ApplyPlan and Destroy say
// what terraform planned or did, in the Result and its JSON form, from
// terraform's own change summary; an Apply that changed something has
// HasChanges, one that changed nothing does not.
func TestResultSummary(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "two", `
resource "terraform_data" "a" { input = "a" }
resource "terraform_data" "b" { input = "b" }
`)
	r := w.runner(t)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "summary", src, nil)}
	want := map[string]struct {
		sum     ChangeSummary
		changes bool
	}{
		"plan":       {ChangeSummary{Add: 2}, true},
		"save-plan":  {ChangeSummary{Add: 2}, true},
		"apply-plan": {ChangeSummary{Add: 2}, true},
		"apply":      {ChangeSummary{}, false},
		"destroy":    {ChangeSummary{Destroy: 2}, true},
	}
	for _, c := range []Command{Plan, SavePlan, ApplyPlan, Apply, Destroy} {
		rep, err := r.Run(testCtx(t), c, u)
		require.NoError(t, err, "%s", c)
		res := rep.Results[0]
		require.NotNil(t, res.Summary, "%s", c)
		require.Equal(t, want[c.String()].sum, *res.Summary, "%s", c)
		require.Equal(t, want[c.String()].changes, res.HasChanges, "%s", c)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		var back Result
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, res.Summary, back.Summary, "%s: the JSON form carries it", c)
	}
}
