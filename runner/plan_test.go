package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// planComponent manages two resources, one from the test provider.
const planComponent = `
terraform {
  required_providers {
    tfitest = {
      source  = "` + testprovider.Source + `"
      version = ">= 1.0.0"
    }
  }
}
variable "name" { type = string }
resource "tfitest_item" "this" { name = var.name }
resource "terraform_data" "meta" { input = var.name }
output "id" { value = tfitest_item.this.id }
`

// TestSavePlanApplyPlan plans twelve instances into saved plans, applies
// exactly those plans, refuses a plan whose unit's source changed in
// between (without re-planning it), and does the same for destroy plans.
func TestSavePlanApplyPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "redis", planComponent)
	// The last instance has a source of its own, changed after its plan.
	staleSrc := w.component(t, "redis-stale", planComponent)
	states := filepath.Join(w.dir, "states")
	var units []Unit
	statePath := map[string]string{}
	for i := range 12 {
		inst := fmt.Sprintf("elasticache/redis-cluster-%02d", i)
		s := src
		if i == 11 {
			s = staleSrc
		}
		st := filepath.Join(states, fmt.Sprintf("%02d.tfstate", i))
		u := Unit{Workdir: workdirSpec("plat-ue2-dev", inst, s, files(t, map[string]any{"name": inst}, st))}
		statePath[u.id()] = st
		units = append(units, u)
	}
	stale := units[11].id()
	r := w.runner(t)

	rep, err := r.Run(testCtx(t), SavePlan, units...)
	require.NoError(t, err)
	require.Len(t, rep.Results, 12)
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		require.True(t, res.HasChanges)
		p := res.Plan
		require.NotNil(t, p, "%s has no plan summary", res.Unit)
		require.FileExists(t, p.File)
		require.FileExists(t, p.JSONFile)
		require.False(t, p.DestroyPlan)
		require.Equal(t, [4]int{2, 0, 0, 0}, [4]int{p.Add, p.Change, p.Destroy, p.Import})
		require.Equal(t, []ResourceChange{
			{Address: "terraform_data.meta", Actions: []string{"create"}},
			{Address: "tfitest_item.this", Actions: []string{"create"}},
		}, p.Changes)
		require.True(t, p.OutputChanges)
		requireShowJSON(t, p.JSONFile, map[string][]string{"terraform_data.meta": {"create"}, "tfitest_item.this": {"create"}})
		_, err := os.Stat(statePath[res.Unit])
		require.ErrorIs(t, err, os.ErrNotExist, "a plan must not create %s's state", res.Unit)
	}

	// The stale unit's source changes between SavePlan and ApplyPlan.
	f, err := os.OpenFile(filepath.Join(staleSrc, "main.tf"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\noutput \"extra\" { value = \"x\" }\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep, err = r.Run(testCtx(t), ApplyPlan, units...)
	require.ErrorIs(t, err, ErrStalePlan)
	require.Equal(t, 1, strings.Count(err.Error(), stale), "the Run's error names the unit, once: %v", err)
	for i, res := range rep.Results {
		if res.Unit == stale {
			require.Equal(t, Failed, res.Status)
			require.ErrorIs(t, res.Err, ErrStalePlan)
			require.ErrorContains(t, res.Err, `the component's files (modified "main.tf") changed since it was saved`)
			// Not re-planned, nothing applied.
			_, err := os.Stat(statePath[res.Unit])
			require.ErrorIs(t, err, os.ErrNotExist, "the stale unit was applied")
			log := readFile(t, res.Log)
			require.NotContains(t, log, "Plan:")
			require.NotContains(t, log, "Apply complete")
			continue
		}
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		require.Equal(t, "item-"+units[i].Workdir.Instance, outputString(t, res, "id"))
		require.NotNil(t, res.Plan)
		require.Equal(t, 2, res.Plan.Add)
		items := stateResources(t, statePath[res.Unit])
		require.Len(t, items, 2)
		require.Contains(t, items, "tfitest_item.this")
		require.Contains(t, items, "terraform_data.meta")
	}

	// A plan is applied once.
	fresh := units[:11]
	rep, err = r.Run(testCtx(t), ApplyPlan, fresh...)
	require.ErrorIs(t, err, ErrNoPlan)
	for _, res := range rep.Results {
		require.Equal(t, Failed, res.Status)
		require.ErrorIs(t, res.Err, ErrNoPlan)
	}

	// Destroy plans, on a few of the instances.
	few := units[:3]
	rep, err = r.Run(testCtx(t), SaveDestroyPlan, few...)
	require.NoError(t, err)
	for _, res := range rep.Results {
		p := res.Plan
		require.NotNil(t, p)
		require.True(t, p.DestroyPlan)
		require.Equal(t, [4]int{0, 0, 2, 0}, [4]int{p.Add, p.Change, p.Destroy, p.Import})
		require.Equal(t, []ResourceChange{
			{Address: "terraform_data.meta", Actions: []string{"delete"}},
			{Address: "tfitest_item.this", Actions: []string{"delete"}},
		}, p.Changes)
		requireShowJSON(t, p.JSONFile, map[string][]string{"terraform_data.meta": {"delete"}, "tfitest_item.this": {"delete"}})
	}
	// ApplyPlan refuses a destroy plan, and leaves it for ApplyDestroyPlan.
	rep, err = r.Run(testCtx(t), ApplyPlan, few...)
	require.ErrorIs(t, err, ErrStalePlan)
	for _, res := range rep.Results {
		require.Equal(t, Failed, res.Status)
		require.ErrorIs(t, res.Err, ErrStalePlan)
		require.ErrorContains(t, res.Err, "destroy plan")
		require.Len(t, stateResources(t, statePath[res.Unit]), 2, "%s: a refused plan destroyed something", res.Unit)
	}
	rep, err = r.Run(testCtx(t), ApplyDestroyPlan, few...)
	require.NoError(t, err)
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status)
		require.Empty(t, stateResources(t, statePath[res.Unit]), "%s: not destroyed", res.Unit)
	}
	// The others are still there.
	require.Len(t, stateResources(t, statePath[units[3].id()]), 2)
}

// requireShowJSON checks that path holds terraform show -json output of a
// plan with exactly the given resource changes.
func requireShowJSON(t *testing.T, path string, want map[string][]string) {
	t.Helper()
	var doc struct {
		FormatVersion    string          `json:"format_version"`
		TerraformVersion string          `json:"terraform_version"`
		PlannedValues    json.RawMessage `json:"planned_values"`
		Configuration    json.RawMessage `json:"configuration"`
		ResourceChanges  []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc), "%s is not JSON", path)
	require.NotEmpty(t, doc.FormatVersion)
	require.True(t, strings.HasPrefix(doc.FormatVersion, "1."), doc.FormatVersion)
	require.NotEmpty(t, doc.TerraformVersion)
	require.NotEmpty(t, doc.PlannedValues)
	require.NotEmpty(t, doc.Configuration)
	got := map[string][]string{}
	for _, rc := range doc.ResourceChanges {
		got[rc.Address] = rc.Change.Actions
	}
	require.Equal(t, want, got)
}

// TestApplyPlanRefusesChangedArgs: ErrStalePlan's promise covers the
// unit's arguments too: a saved plan made with other variables, targets
// or replacements than the unit now has is refused, not applied with
// values the caller no longer asks for.
func TestApplyPlanRefusesChangedArgs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "vars", varsComponent)
	r := w.runner(t)
	changes := []struct {
		name         string
		saved, later Args
		want         string // what the error names
	}{
		{"vars", Args{Vars: map[string]string{"name": "one"}}, Args{Vars: map[string]string{"name": "two"}}, "-var name changed"},
		{"targets", Args{Vars: map[string]string{"name": "one"}}, Args{Vars: map[string]string{"name": "one"}, Targets: []string{"output.name"}}, "argument -target (added) changed"},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", "args-"+c.name, src, nil), Args: c.saved}
			_, err := r.Run(testCtx(t), SavePlan, u)
			require.NoError(t, err)
			u.Args = c.later
			rep, err := r.Run(testCtx(t), ApplyPlan, u)
			require.NotNil(t, rep)
			require.ErrorIs(t, err, ErrStalePlan, "a plan saved with other arguments was applied (output name = %s)", rep.Results[0].Outputs["name"].Value)
			require.ErrorContains(t, err, c.want)
		})
	}
}
