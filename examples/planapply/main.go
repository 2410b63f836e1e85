package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// run is the example; main (flags.go) calls it with the command line.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "root: %s\n", o.root)
	// The offline stand-in (offline.go): terraform, the component, the registry.
	env, err := startOffline(ctx, o.root)
	if err != nil {
		return err
	}
	defer env.close()
	cache, err := pluginc.Open(filepath.Join(o.root, "plugin-cache"), env.cacheOptions...)
	if err != nil {
		return err
	}
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(env.terraform),
		runner.WithParallelism(o.parallelism),
	)
	if err != nil {
		return err
	}
	units := clusters(env.source, o.n, o.latency)

	// Plan every instance into a saved plan in its own workdir.
	fmt.Fprintf(stdout, "planning %d instances of elasticache in stack plat-ue2-dev, parallelism %d\n", o.n, o.parallelism)
	plans, err := r.Run(ctx, runner.SavePlan, units...)
	if plans != nil {
		printPlans(stdout, plans)
	}
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}

	// Apply exactly the saved plans that change something (the report
	// has the units' order).
	var changed []runner.Unit
	for i, res := range plans.Results {
		if res.HasChanges {
			changed = append(changed, units[i])
		}
	}
	if len(changed) == 0 {
		fmt.Fprintln(stdout, "no changes: nothing to apply")
		return nil
	}
	fmt.Fprintf(stdout, "\napplying the %d saved plans with changes\n", len(changed))
	applied, err := r.Run(ctx, runner.ApplyPlan, changed...)
	if applied != nil {
		printApplied(stdout, applied)
	}
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return nil
}

// clusters are the units elasticache/redis-cluster-1..n of source.
func clusters(source string, n int, latency time.Duration) []runner.Unit {
	units := make([]runner.Unit, n)
	for i := range units {
		name := fmt.Sprintf("redis-cluster-%d", i+1)
		units[i] = runner.Unit{Workdir: workdir.Spec{
			Stack:    "plat-ue2-dev",
			Instance: "elasticache/" + name,
			Source:   source,
			Files: map[string][]byte{
				"backend.tf.json":            []byte(`{"terraform": {"backend": {"local": {}}}}`),
				"terraform.auto.tfvars.json": fmt.Appendf(nil, `{"name": "plat-ue2-dev-%s", "latency_seconds": %g}`, name, latency.Seconds()),
			},
		}}
	}
	return units
}
