package runner_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// units returns a small stack: a vpc, two caches on it, an app on both,
// and an unrelated dns zone.
func units(src string) []runner.Unit {
	u := func(instance string, deps ...string) runner.Unit {
		return runner.Unit{
			Workdir:   workdir.Spec{Stack: "plat-ue2-dev", Instance: instance, Source: src},
			DependsOn: deps,
		}
	}
	return []runner.Unit{
		u("vpc"),
		u("redis-1", "plat-ue2-dev/vpc"),
		u("redis-2", "plat-ue2-dev/vpc"),
		u("app", "plat-ue2-dev/redis-1", "plat-ue2-dev/redis-2"),
		u("dns"),
	}
}

// newRunner makes a runner over a throwaway workdir root; dry runs never
// write into it.
func newRunner(opts ...runner.Option) (*runner.Runner, error) {
	root, err := os.MkdirTemp("", "tfisolate-example-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	wd, err := workdir.New(root)
	if err != nil {
		return nil, err
	}
	return runner.New(append([]runner.Option{runner.WithWorkdirs(wd)}, opts...)...)
}

// Order shows the order a command would use, without running anything.
// Destroy reverses it.
func ExampleRunner_Order() {
	r, err := newRunner()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cmd := range []runner.Command{runner.Apply, runner.Destroy} {
		waves, err := r.Order(cmd, units("components/terraform/x")...)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(cmd, waves)
	}
	// Output:
	// apply [[plat-ue2-dev/dns plat-ue2-dev/vpc] [plat-ue2-dev/redis-1 plat-ue2-dev/redis-2] [plat-ue2-dev/app]]
	// destroy [[plat-ue2-dev/app plat-ue2-dev/dns] [plat-ue2-dev/redis-1 plat-ue2-dev/redis-2] [plat-ue2-dev/vpc]]
}

// Shards split units for CI fan-out; dependent units stay together.
func ExampleWithShard() {
	for i := range 2 {
		r, err := newRunner(runner.WithShard(i, 2))
		if err != nil {
			fmt.Println(err)
			return
		}
		waves, _ := r.Order(runner.Apply, units("components/terraform/x")...)
		fmt.Println("shard", i, waves)
	}
	// Output:
	// shard 0 [[plat-ue2-dev/vpc] [plat-ue2-dev/redis-1 plat-ue2-dev/redis-2] [plat-ue2-dev/app]]
	// shard 1 [[plat-ue2-dev/dns]]
}

// Filters select units by ID with globs; "!" excludes.
func ExampleWithFilter() {
	r, err := newRunner(runner.WithFilter("plat-ue2-dev/*", "!*/redis-2"))
	if err != nil {
		fmt.Println(err)
		return
	}
	waves, _ := r.Order(runner.Apply, units("components/terraform/x")...)
	fmt.Println(waves)
	// Output:
	// [[plat-ue2-dev/dns plat-ue2-dev/vpc] [plat-ue2-dev/redis-1] [plat-ue2-dev/app]]
}

// A cycle is refused before anything runs, and the error names it.
func ExampleRunner_Run_cycle() {
	r, err := newRunner()
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = r.Run(context.Background(), runner.Apply,
		runner.Unit{ID: "a", DependsOn: []string{"b"}},
		runner.Unit{ID: "b", DependsOn: []string{"a"}},
	)
	fmt.Println(err)
	// Output:
	// dependency cycle: a -> b -> a
}

// A full run: one component applied as three instances, one per stack,
// in parallel, each in its own workdir with its own state. The component
// uses only terraform's built-in terraform_data, so nothing is
// downloaded; a component with providers adds runner.WithPluginCache
// (see its example). The runner finds terraform on PATH.
func ExampleRunner_Run() {
	root, err := os.MkdirTemp("", "tfisolate-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	component := filepath.Join(root, "components", "app")
	if err := os.MkdirAll(component, 0o755); err != nil {
		fmt.Println(err)
		return
	}
	err = os.WriteFile(filepath.Join(component, "main.tf"), []byte(`
variable "name" { type = string }
resource "terraform_data" "app" { input = var.name }
output "name" { value = terraform_data.app.output }
`), 0o644)
	if err != nil {
		fmt.Println(err)
		return
	}

	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(runner.WithWorkdirs(wds), runner.WithParallelism(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	var units []runner.Unit
	for _, stack := range []string{"plat-ue2-dev", "plat-ue2-staging", "plat-ue2-prod"} {
		units = append(units, runner.Unit{Workdir: workdir.Spec{
			Stack:    stack,
			Instance: "app",
			Source:   component,
			Files:    map[string][]byte{"app.auto.tfvars.json": fmt.Appendf(nil, `{"name": "%s-app"}`, stack)},
		}})
	}
	rep, err := r.Run(context.Background(), runner.Apply, units...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range rep.Results {
		fmt.Println(res.Unit, res.Status, string(res.Outputs["name"].Value))
	}
	// Output:
	// plat-ue2-dev/app succeeded "plat-ue2-dev-app"
	// plat-ue2-staging/app succeeded "plat-ue2-staging-app"
	// plat-ue2-prod/app succeeded "plat-ue2-prod-app"
}

// Twelve instances of one component with providers: one shared provider
// cache, progress events and a prefixed combined log on stdout. Cancelling
// the context (Ctrl-C) interrupts terraform gracefully.
func ExampleWithPluginCache() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	home, _ := os.UserCacheDir()
	cache, err := pluginc.Open(filepath.Join(home, "tfisolate", "providers"))
	if err != nil {
		fmt.Println(err)
		return
	}
	wd, err := workdir.New(filepath.Join(home, "tfisolate", "workdirs"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(
		runner.WithWorkdirs(wd),
		runner.WithPluginCache(cache),
		runner.WithParallelism(12),
		runner.WithOutput(os.Stdout),
		runner.WithEvents(func(e runner.Event) {
			if e.Phase == runner.PhaseDone {
				fmt.Fprintf(os.Stderr, "%s: %s\n", e.Unit, e.Status)
			}
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	var us []runner.Unit
	for i := range 12 {
		inst := fmt.Sprintf("elasticache/redis-cluster-%d", i+1)
		us = append(us, runner.Unit{Workdir: workdir.Spec{
			Stack:    "plat-ue2-dev",
			Instance: inst,
			Source:   "components/terraform/elasticache",
			Files:    map[string][]byte{"terraform.tfvars.json": fmt.Appendf(nil, `{"name":%q}`, inst)},
		}})
	}
	rep, err := r.Run(ctx, runner.Apply, us...)
	if err != nil {
		fmt.Println(err)
	}
	if rep == nil {
		return // the units were refused; err says why
	}
	for _, res := range rep.Results {
		fmt.Println(res.Unit, res.Status, res.Duration, "log:", res.Log)
	}
}
