package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The plan/apply split of CI tools: plan every unit into a saved plan,
// show the summaries (a PR comment would take Result.Plan.RedactedJSONFile), and
// later apply exactly those plans. A unit whose workdir, lock file,
// terraform, arguments or environment changed in between is refused with
// ErrStalePlan, never re-planned.
func ExampleRunner_Run_savedPlans() {
	ctx := context.Background()
	r, units := exampleRunner()
	plans, err := r.Run(ctx, runner.SavePlan, units...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range plans.Results {
		p := res.Plan
		fmt.Printf("%s: +%d ~%d -%d (%s)\n", res.Unit, p.Add, p.Change, p.Destroy, p.RedactedJSONFile)
	}
	applied, err := r.Run(ctx, runner.ApplyPlan, units...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range applied.Results {
		fmt.Println(res.Unit, res.Status, string(res.Outputs["id"].Value))
	}
}

// A dependency's outputs flow into its dependents in the same Run:
// Generate is called right before the unit starts, once the units it
// depends on are done, and returns generated files.
func ExampleUnit_generate() {
	app := runner.Unit{
		ID:        "plat-ue2-dev/app",
		DependsOn: []string{"plat-ue2-dev/vpc"},
		Workdir:   workdir.Spec{Stack: "plat-ue2-dev", Instance: "app", Source: "components/terraform/app"},
		Generate: func(ctx context.Context, deps map[string]runner.Result) (map[string][]byte, error) {
			vpc, ok := deps["plat-ue2-dev/vpc"].Outputs["vpc_id"]
			if !ok {
				return nil, fmt.Errorf("the vpc has no vpc_id output")
			}
			vars, err := json.Marshal(map[string]json.RawMessage{"vpc_id": vpc.Value})
			return map[string][]byte{"vpc.auto.tfvars.json": vars}, err
		},
	}
	fmt.Println(app.ID, "waits for", app.DependsOn)
	// Output:
	// plat-ue2-dev/app waits for [plat-ue2-dev/vpc]
}

// A custom step runs over every unit with the runner's guarantees (queue
// order, parallelism, the instance lock, interrupts, logs, the report):
// here, the addresses in each unit's state, recorded into the report.
func ExampleStep() {
	list := runner.Step("state-list", func(ctx context.Context, h *runner.Handle) error {
		st, err := h.Terraform.Show(ctx)
		if err != nil {
			return err
		}
		var addrs []string
		if st.Values != nil && st.Values.RootModule != nil {
			for _, r := range st.Values.RootModule.Resources {
				addrs = append(addrs, r.Address)
			}
		}
		fmt.Fprintf(h.Log, "%d resources\n", len(addrs))
		h.Record(addrs)
		return nil
	})
	r, units := exampleRunner()
	rep, err := r.Run(context.Background(), list, units...)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.MarshalIndent(rep, "", "  ") // the documented JSON form
	fmt.Println(string(b))
}

// A CLI maps repeated Ctrl-C to the stop ladder: the first drains (no
// new unit starts), the second interrupts terraform (it releases its
// state locks), the third kills it.
func ExampleNewStop() {
	stop := runner.NewStop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			fmt.Fprintln(os.Stderr, "stopping:", stop.Request())
		}
	}()
	r, units := exampleRunner(runner.WithStop(stop))
	rep, err := r.Run(context.Background(), runner.Apply, units...)
	if rep != nil {
		fmt.Println("never started:", rep.NotStarted())
	}
	if err != nil {
		fmt.Println(err)
	}
}

// Affected maps changed files (git diff --name-only, say) to the units
// whose component or local modules hold them.
func ExampleAffected() {
	repo, _ := os.MkdirTemp("", "tfisolate-example-")
	defer os.RemoveAll(repo)
	write := func(p, body string) {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755)
		_ = os.WriteFile(filepath.Join(repo, p), []byte(body), 0o644)
	}
	write("components/app/main.tf", `module "net" { source = "../../modules/net" }`)
	write("components/dns/main.tf", `resource "terraform_data" "zone" {}`)
	write("modules/net/main.tf", `output "id" { value = "net" }`)
	units := []runner.Unit{
		{ID: "plat-ue2-dev/app", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "app", Source: filepath.Join(repo, "components/app")}},
		{ID: "plat-ue2-dev/dns", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "dns", Source: filepath.Join(repo, "components/dns")}},
	}
	ids, err := runner.Affected(units, repo, "modules/net/main.tf")
	fmt.Println(ids, err)
	// Output:
	// [plat-ue2-dev/app] <nil>
}

// exampleRunner is the runner and units the examples above share.
func exampleRunner(opts ...runner.Option) (*runner.Runner, []runner.Unit) {
	home, _ := os.UserCacheDir()
	wd, err := workdir.New(filepath.Join(home, "tfisolate", "workdirs"))
	if err != nil {
		panic(err)
	}
	r, err := runner.New(append([]runner.Option{runner.WithWorkdirs(wd)}, opts...)...)
	if err != nil {
		panic(err)
	}
	var units []runner.Unit
	for i := 1; i <= 3; i++ {
		units = append(units, runner.Unit{Workdir: workdir.Spec{
			Stack:    "plat-ue2-dev",
			Instance: fmt.Sprintf("elasticache/redis-cluster-%d", i),
			Source:   "components/terraform/elasticache",
		}})
	}
	return r, units
}
