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

// A full run: twelve instances of one component, one shared provider
// cache, progress events and a prefixed combined log on stdout. Cancelling
// the context (Ctrl-C) interrupts terraform gracefully.
func ExampleRunner_Run() {
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

// OrderWith takes a Run's own choices, as RunWith does: here the units a
// change to the vpc affects, chosen by ID, and the units that depend on
// them; a Runner's defaults (none here) still apply to every other Run.
func ExampleRunner_OrderWith() {
	r, err := newRunner()
	if err != nil {
		fmt.Println(err)
		return
	}
	all := units("components/terraform/x")
	waves, err := r.OrderWith(runner.Apply, all, runner.WithIDs("plat-ue2-dev/vpc"), runner.WithDependents())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(waves)
	waves, err = r.OrderWith(runner.Apply, all, runner.WithIDs("plat-ue2-dev/redis-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(waves)
	// Output:
	// [[plat-ue2-dev/vpc] [plat-ue2-dev/redis-1 plat-ue2-dev/redis-2] [plat-ue2-dev/app]]
	// [[plat-ue2-dev/redis-1]]
}
