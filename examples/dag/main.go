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
	// The offline stand-in (offline.go): terraform, the components, the registry.
	env, err := startOffline(ctx, o.root, o.padding)
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
	units := stackUnits(env.vpcSource, env.source, o.latency)
	printUnits(stdout, units)

	tl := &timeline{w: stdout}
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(env.terraform),
		runner.WithParallelism(o.parallelism),
		runner.WithEvents(tl.event),
	)
	if err != nil {
		return err
	}
	for _, cmd := range []runner.Command{runner.Apply, runner.Destroy} {
		waves, err := r.Order(cmd, units...)
		if err != nil {
			return err
		}
		printWaves(stdout, cmd, waves)
	}

	for i, cmd := range []runner.Command{runner.Apply, runner.Destroy} {
		fmt.Fprintf(stdout, "\n%s:\n", cmd)
		tl.reset()
		rep, err := r.Run(ctx, cmd, units...)
		if rep != nil {
			summary(stdout, rep)
			if i == 0 { // applied: what each cluster received
				printDataFlow(stdout, rep)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return nil
}

// stackUnits are the VPC of vpcSource and the clusters of source: 1 and 2
// depend on the VPC and get its outputs (networkVars), 3 is independent.
func stackUnits(vpcSource, source string, latency time.Duration) []runner.Unit {
	unit := func(instance, src string, deps ...string) runner.Unit {
		u := runner.Unit{DependsOn: deps, Workdir: workdir.Spec{
			Stack: stack, Instance: instance, Source: src,
			Files: map[string][]byte{
				"backend.tf.json":            []byte(`{"terraform": {"backend": {"local": {}}}}`),
				"terraform.auto.tfvars.json": vars(instance, latency),
			},
		}}
		if len(deps) > 0 {
			u.Generate = networkVars // called once the VPC is done, with its result
		}
		return u
	}
	// Dependents come first: the order comes from DependsOn, not the list.
	return []runner.Unit{
		unit(cluster1, source, unitID(vpc)),
		unit(cluster2, source, unitID(vpc)),
		unit(cluster3, source),
		unit(vpc, vpcSource),
	}
}
