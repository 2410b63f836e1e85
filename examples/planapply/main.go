// Command planapply plans twelve instances into saved plans, shows what
// each would change, then applies exactly those plans: what was reviewed
// is what gets applied, never a fresh plan. Stack plat-ue2-dev,
// instances elasticache/redis-cluster-1..12 of one component, offline (the
// provider is built on first run and served from a loopback registry).
//
// runner.SavePlan keeps each plan in its instance's workdir and puts its
// path and counts in Result.Plan; runner.ApplyPlan applies that file and
// refuses one whose workdir, lock file or terraform changed since. Run it
// twice: the second time every plan is empty and nothing is applied.
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
			fmt.Fprintln(os.Stderr, "planapply:", err)
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
	env, err := demo.SetupOffline(ctx, o.root, 0)
	if err != nil {
		return err
	}
	defer env.Close()
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	// Each unit's log is DATADIR/tfisolate-logs/COMMAND.log in its
	// workdir: the plan's log stays beside the apply's.
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(env.Cache),
		runner.WithTerraform(env.Terraform),
		runner.WithParallelism(o.parallelism),
	)
	if err != nil {
		return err
	}
	units := demo.Units(env.Source(demo.Component), o.n, o.latency)

	// Plan every instance into a saved plan in its own workdir.
	fmt.Fprintf(stdout, "planning %d instances of %s in stack %s, parallelism %d\n", o.n, demo.ComponentName, demo.Stack, o.parallelism)
	plans, err := r.Run(ctx, runner.SavePlan, units...)
	if plans != nil {
		printPlans(stdout, plans)
	}
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}

	// Apply exactly the saved plans that change something. The report
	// has the units' order, so results and units line up.
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
