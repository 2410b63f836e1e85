//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const vpcComponent = `
resource "terraform_data" "vpc" { input = "vpc-0abc1234" }
output "vpc_id" { value = terraform_data.vpc.output }
`

const appComponent = `
variable "vpc_id" { type = string }
resource "terraform_data" "app" { input = var.vpc_id }
output "vpc_id" { value = terraform_data.app.output }
`

// TestGenerateFromDependencyOutputs: app depends on vpc and generates its
// tfvars from vpc's outputs, right before it starts. In the same Run an
// unrelated unit is parked on a gate: app finishes while it is still
// parked, so a unit waits for its dependencies only, not for the run.
func TestGenerateFromDependencyOutputs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	var gotDeps map[string]Result // written by Generate, read after Run
	units := []Unit{
		{ID: "vpc", Workdir: workdirSpec("plat-ue2-dev", "vpc", w.component(t, "vpc", vpcComponent), nil)},
		{ID: "app", DependsOn: []string{"vpc"}, Workdir: workdirSpec("plat-ue2-dev", "app", w.component(t, "app", appComponent), nil),
			Generate: func(ctx context.Context, deps map[string]Result) (map[string][]byte, error) {
				gotDeps = deps
				vpc, ok := deps["vpc"]
				if !ok {
					return nil, errors.New("no result for vpc")
				}
				id, ok := vpc.Outputs["vpc_id"]
				if !ok {
					return nil, fmt.Errorf("vpc has no vpc_id output: %v", vpc.Outputs)
				}
				return map[string][]byte{"vpc.auto.tfvars.json": []byte(`{"vpc_id":` + string(id.Value) + `}`)}, nil
			}},
		{ID: "slow", Workdir: workdirSpec("plat-ue2-dev", "slow", w.component(t, "slow", gatedComponent),
			map[string][]byte{"terraform.tfvars.json": []byte(`{"gate":"` + g.dir + `"}`)})},
	}
	rec := &recorder{}
	appDone := make(chan struct{})
	r := w.runner(t, WithParallelism(3), WithEvents(func(e Event) {
		rec.add(e)
		if e.Unit == "app" && e.Phase == PhaseDone {
			close(appDone)
		}
	}))
	started := g.started(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	type out struct {
		rep *Report
		err error
	}
	done := make(chan out, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		rep, err := r.Run(ctx, Apply, units...)
		done <- out{rep, err}
	}()
	t.Cleanup(func() { cancel(); <-exited })
	for _, ch := range []<-chan struct{}{started, appDone} {
		select {
		case <-ch:
		case o := <-done:
			t.Fatalf("the run ended while slow should be parked: %v", o.err)
		}
	}
	// app is done; slow is still parked on its gate.
	require.Equal(t, Succeeded, rec.event("app", PhaseDone).Status, "%v", rec.event("app", PhaseDone).Err)
	require.Equal(t, -1, rec.index("slow", PhaseDone), "slow ended before it was released")
	require.Less(t, rec.index("vpc", PhaseDone), rec.index("app", PhasePrepare), "app started before vpc was done")

	g.release(t)
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, map[string]Status{"vpc": Succeeded, "app": Succeeded, "slow": Succeeded}, statuses(o.rep))
	vpc, _ := o.rep.Result("vpc")
	app, _ := o.rep.Result("app")
	require.Equal(t, "vpc-0abc1234", outputString(t, vpc, "vpc_id"))
	require.Equal(t, outputString(t, vpc, "vpc_id"), outputString(t, app, "vpc_id"))
	require.Len(t, gotDeps, 1, "Generate gets its dependencies' results only")
	require.Equal(t, Succeeded, gotDeps["vpc"].Status)
}

// TestGenerateError: a failing Generate fails its unit with ErrGenerate
// before anything runs for it, and its dependents are skipped.
func TestGenerateError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "app", appComponent)
	boom := errors.New("vpc outputs unreadable")
	units := []Unit{
		{ID: "app", Workdir: workdirSpec("plat-ue2-dev", "app", src, nil),
			Generate: func(context.Context, map[string]Result) (map[string][]byte, error) { return nil, boom }},
		{ID: "web", DependsOn: []string{"app"}, Workdir: workdirSpec("plat-ue2-dev", "web", src, nil)},
	}
	rep, err := w.runner(t).Run(testCtx(t), Apply, units...)
	require.ErrorIs(t, err, ErrGenerate)
	require.ErrorIs(t, err, boom)
	app, _ := rep.Result("app")
	require.Equal(t, Failed, app.Status)
	require.ErrorIs(t, app.Err, ErrGenerate)
	web, _ := rep.Result("web")
	require.Equal(t, Skipped, web.Status)
	require.ErrorIs(t, web.Err, ErrDependencyFailed)
	home, err := w.wd.Home("plat-ue2-dev", "app")
	require.NoError(t, err)
	_, err = os.Stat(home)
	require.ErrorIs(t, err, os.ErrNotExist, "a workdir was prepared for a unit whose Generate failed")
}
