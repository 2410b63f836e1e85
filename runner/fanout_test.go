package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestFanOut: jobs balanced by unit count, in the waves' order, every
// unit once; fewer units than jobs gives one job per unit; bad input is
// refused.
func TestFanOut(t *testing.T) {
	plan, err := FanOut([][]string{{"a"}, {"b", "c", "d", "e", "f", "g", "h"}, {}}, 3)
	require.NoError(t, err)
	require.Equal(t, FanOutPlan{Waves: []FanOutWave{
		{Jobs: [][]string{{"a"}}},
		{Jobs: [][]string{{"b", "c", "d"}, {"e", "f"}, {"g", "h"}}},
	}}, plan)
	b, err := json.Marshal(plan)
	require.NoError(t, err)
	require.JSONEq(t, `{"waves":[{"jobs":[["a"]]},{"jobs":[["b","c","d"],["e","f"],["g","h"]]}]}`, string(b))
	_, err = FanOut(nil, 0)
	require.ErrorIs(t, err, ErrBadOption)
}

// TestFanOutAcrossMachines, under both engines: a VPC and 12 dependents
// whose Generate reads the VPC's output, fanned out for a CI matrix:
// wave 1 (the VPC) on machine A, wave 2 split into 3 jobs run at once on
// machines B, C and D (each its own workdir root), all on one http state
// backend. Every dependent got the VPC's output from the backend, 13/13
// applied, and the union of the jobs is every unit once. A wave-2 job
// started before wave 1 fails with ErrNotApplied naming the VPC and
// applies nothing. The same 13 units in one Run on one machine (on a
// backend of their own) apply alike; the test logs both wall times for
// the figures (nothing is asserted on them).
func TestFanOutAcrossMachines(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		vpc, app := filepath.Join(w.dir, "components", "vpc"), filepath.Join(w.dir, "components", "app")
		writeTree(t, vpc, map[string]string{"main.tf": `
variable "id" { type = string }
output "vpc_id" { value = var.id }
`})
		writeTree(t, app, map[string]string{"main.tf": `
variable "vpc_id" { type = string }
output "seen" { value = var.vpc_id }
`})
		unitsOn := func(srv *testbackend.HTTPState) []Unit {
			backend := func(name string, extra map[string][]byte) map[string][]byte {
				files := map[string][]byte{"backend.tf.json": srv.BackendJSON(name)}
				for k, v := range extra {
					files[k] = v
				}
				return files
			}
			units := []Unit{{ID: "s/vpc", Workdir: workdirSpec("s", "vpc", vpc, backend("vpc", map[string][]byte{"terraform.tfvars.json": []byte(`{"id":"vpc-7"}`)}))}}
			for i := range 12 {
				units = append(units, Unit{ID: fmt.Sprintf("s/app-%02d", i), DependsOn: []string{"s/vpc"},
					Workdir: workdirSpec("s", fmt.Sprintf("app-%02d", i), app, backend(fmt.Sprintf("app-%02d", i), nil)),
					Generate: func(_ context.Context, deps map[string]Result) (map[string][]byte, error) {
						o, ok := deps["s/vpc"].Outputs["vpc_id"]
						if !ok {
							return nil, fmt.Errorf("no vpc_id from s/vpc: %+v", deps["s/vpc"])
						}
						b, err := json.Marshal(map[string]json.RawMessage{"vpc_id": o.Value})
						return map[string][]byte{"vpc.auto.tfvars.json": b}, err
					}})
			}
			return units
		}
		srv := testbackend.StartHTTPState(t)
		units := unitsOn(srv)
		machine := func(name string) *Runner {
			wd, err := workdir.New(filepath.Join(w.dir, name, "workdirs"))
			require.NoError(t, err)
			r, err := New(WithWorkdirs(wd), WithPluginCache(w.cache), WithTerraform(e.Path))
			require.NoError(t, err)
			return r
		}
		a := machine("a")
		waves, err := a.Order(Apply, units...)
		require.NoError(t, err)
		plan, err := FanOut(waves, 3)
		require.NoError(t, err)
		require.Len(t, plan.Waves, 2)
		require.Len(t, plan.Waves[1].Jobs, 3)
		var all []string
		for _, wave := range plan.Waves {
			for _, job := range wave.Jobs {
				all = append(all, job...)
			}
		}
		var ids []string
		for _, u := range units {
			ids = append(ids, u.ID)
		}
		require.ElementsMatch(t, ids, all, "the union of the jobs is every unit once")

		// A wave-2 job before wave 1 ran: its dependency has not been applied.
		early, err := machine("early").RunWith(testCtx(t), Apply, units, WithIDs(plan.Waves[1].Jobs[0]...))
		require.ErrorIs(t, err, ErrNotApplied)
		for _, res := range early.Results {
			require.ErrorIs(t, res.Err, ErrNotApplied, "%s", res.Unit)
			require.ErrorContains(t, res.Err, "dependency s/vpc")
			_, ok := srv.State(res.Unit[len("s/"):])
			require.False(t, ok, "%s applied nothing", res.Unit)
		}

		// Wave 1 on A.
		t0 := time.Now()
		rep, err := a.RunWith(testCtx(t), Apply, units, WithIDs(plan.Waves[0].Jobs[0]...))
		require.NoError(t, err)
		require.Equal(t, map[string]Status{"s/vpc": Succeeded}, statuses(rep))

		// Wave 2: three machines at once.
		var mu sync.Mutex
		done := map[string]Result{}
		var wg sync.WaitGroup
		errs := make([]error, len(plan.Waves[1].Jobs))
		for j, job := range plan.Waves[1].Jobs {
			r := machine(string(rune('b' + j)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := r.RunWith(testCtx(t), Apply, units, WithIDs(job...))
				errs[j] = err
				if rep == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, res := range rep.Results {
					done[res.Unit] = res
				}
			}()
		}
		wg.Wait()
		fanOut := time.Since(t0)
		for j, err := range errs {
			require.NoError(t, err, "job %d", j)
		}
		require.Len(t, done, 12)
		for id, res := range done {
			require.Equal(t, Succeeded, res.Status, "%s: %v", id, res.Err)
			require.Equal(t, "vpc-7", outputString(t, res, "seen"), "%s got the VPC's output from the backend", id)
			st, ok := srv.State(id[len("s/"):])
			require.True(t, ok, "%s's state is on the backend", id)
			require.Contains(t, string(st), "vpc-7")
		}
		require.True(t, slices.IsSorted(plan.Waves[1].Jobs[0]))

		// The same units in one Run on one machine, on a backend of their own.
		t0 = time.Now()
		one, err := machine("one").Run(testCtx(t), Apply, unitsOn(testbackend.StartHTTPState(t))...)
		oneRun := time.Since(t0)
		require.NoError(t, err)
		require.Len(t, one.Results, 13)
		for _, res := range one.Results[1:] {
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			require.Equal(t, "vpc-7", outputString(t, res, "seen"), "%s", res.Unit)
		}
		t.Logf("%s: fan-out (wave 1 on one machine, wave 2 on three at once) %s; the same 13 units in one Run %s",
			e.Kind, fanOut.Round(time.Millisecond), oneRun.Round(time.Millisecond))
	})
}
