// Command dag shows the runner's run queue and the data that flows along
// it: units that depend on each other are applied in dependency order and
// destroyed in the reverse order, independent units run alongside, and a
// unit gets the outputs of the units it depends on.
//
// Stack plat-ue2-dev has four instances:
//
//	network/vpc                  the vpc component: outputs vpc_id, subnet_ids
//	elasticache/redis-cluster-1  depends on network/vpc, placed in it
//	elasticache/redis-cluster-2  depends on network/vpc, placed in it
//	elasticache/redis-cluster-3  independent
//
// A cluster in the VPC has a Unit.Generate: right before it starts, in the
// same Run, it gets the VPC's result and writes its outputs into a tfvars
// file. The example prints the order of apply and of destroy (Runner.Order,
// a dry run), then applies and destroys, printing when each unit starts and
// ends, and what each cluster received. It works offline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "dag:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "root: %s\n", o.root)
	env, err := demo.SetupOffline(ctx, o.root, o.padding)
	if err != nil {
		return err
	}
	defer env.Close()
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	units := stackUnits(env.Source(demo.VPCComponent), env.Source(demo.Component), o.latency)
	printUnits(stdout, units)

	tl := &timeline{w: stdout}
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(env.Cache),
		runner.WithTerraform(env.Terraform),
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

	fmt.Fprintln(stdout, "\napply:")
	tl.reset()
	rep, err := r.Run(ctx, runner.Apply, units...)
	if rep != nil {
		summary(stdout, rep)
		printDataFlow(stdout, rep)
	}
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}

	fmt.Fprintln(stdout, "\ndestroy:")
	tl.reset()
	rep, err = r.Run(ctx, runner.Destroy, units...)
	if rep != nil {
		summary(stdout, rep)
	}
	if err != nil {
		return fmt.Errorf("destroy: %w", err)
	}
	return nil
}
