package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// plainComponent needs no provider: it runs fast under any engine.
const plainComponent = `output "o" { value = "ok" }`

// vpcWorld is a VPC whose ID is a variable, an app whose Generate reads
// the VPC's output into its own variable (and records what it got), and
// an unrelated unit; the app's ID holds glob characters.
type vpcWorld struct {
	w     *world
	units []Unit
	got   map[string]Result // what the app's Generate got, per dependency
}

const appID = "s/app[1]"

func newVPCWorld(t *testing.T) *vpcWorld {
	v := &vpcWorld{w: newWorld(t)}
	vpc := v.w.component(t, "vpc", `
variable "id" { type = string }
output "vpc_id" { value = var.id }
`)
	app := v.w.component(t, "app", `
variable "vpc_id" { type = string }
output "seen" { value = var.vpc_id }
`)
	v.units = []Unit{
		{ID: "s/vpc", Workdir: workdirSpec("s", "vpc", vpc, map[string][]byte{"terraform.tfvars.json": []byte(`{"id":"vpc-1"}`)})},
		{ID: appID, DependsOn: []string{"s/vpc"}, Workdir: workdirSpec("s", "app", app, nil),
			Generate: func(_ context.Context, deps map[string]Result) (map[string][]byte, error) {
				v.got = deps
				o, ok := deps["s/vpc"].Outputs["vpc_id"]
				if !ok {
					return nil, fmt.Errorf("no vpc_id among the dependency's outputs: %v", deps)
				}
				b, err := json.Marshal(map[string]json.RawMessage{"vpc_id": o.Value})
				return map[string][]byte{"vpc.auto.tfvars.json": b}, err
			}},
		{ID: "s/other", Workdir: workdirSpec("s", "other", v.w.component(t, "other", plainComponent), nil)},
	}
	return v
}

// TestWithIDsRunsExactlyThese: the units Affected would name, run by ID
// among all units: a dependency outside the set counts as done, its
// outputs are read and handed to the chosen unit's Generate (with a
// Succeeded Result), IDs need no glob quoting, and an unknown ID is
// refused by name before anything runs (issue 17 item 8).
func TestWithIDsRunsExactlyThese(t *testing.T) {
	v := newVPCWorld(t)
	r := v.w.runner(t)
	_, err := r.Run(testCtx(t), Apply, v.units...)
	require.NoError(t, err)

	v.got = nil
	rep, err := r.RunWith(testCtx(t), Apply, v.units, WithIDs(appID))
	require.NoError(t, err)
	require.Equal(t, map[string]Status{appID: Succeeded}, statuses(rep))
	require.Equal(t, "vpc-1", outputString(t, rep.Results[0], "seen"))
	require.Equal(t, Succeeded, v.got["s/vpc"].Status)

	// A Plan too (its outputs come from the pre-pass as before).
	rep, err = r.RunWith(testCtx(t), Plan, v.units, WithIDs(appID))
	require.NoError(t, err)
	require.Equal(t, map[string]Status{appID: Succeeded}, statuses(rep))

	_, err = r.RunWith(testCtx(t), Apply, v.units, WithIDs(appID, "s/nope"))
	require.ErrorIs(t, err, ErrNoMatch)
	require.ErrorContains(t, err, `"s/nope"`)
	_, err = r.RunWith(testCtx(t), Apply, v.units, WithIDs())
	require.ErrorIs(t, err, ErrBadOption)
}

// TestWithDependents: a changed VPC, chosen by ID, re-applies the units
// that read it, which get its new outputs; an unrelated unit stays out.
func TestWithDependents(t *testing.T) {
	v := newVPCWorld(t)
	r := v.w.runner(t)
	_, err := r.Run(testCtx(t), Apply, v.units...)
	require.NoError(t, err)

	v.units[0].Workdir.Files = map[string][]byte{"terraform.tfvars.json": []byte(`{"id":"vpc-2"}`)}
	waves, err := r.OrderWith(Apply, v.units, WithIDs("s/vpc"), WithDependents())
	require.NoError(t, err)
	require.Equal(t, [][]string{{"s/vpc"}, {appID}}, waves)
	rep, err := r.RunWith(testCtx(t), Apply, v.units, WithIDs("s/vpc"), WithDependents())
	require.NoError(t, err)
	require.Equal(t, map[string]Status{"s/vpc": Succeeded, appID: Succeeded}, statuses(rep))
	app, _ := rep.Result(appID)
	require.Equal(t, "vpc-2", outputString(t, app, "seen"))
}
