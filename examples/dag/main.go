// Command dag shows the runner's run queue: units that depend on each other
// are applied in dependency order and destroyed in the reverse order, while
// independent units run alongside.
//
// Stack plat-ue2-dev has four instances of the demo component:
//
//	network/vpc                  (ancestor dependency)
//	network/subnets              depends on network/vpc
//	elasticache/redis-cluster-1  depends on network/subnets
//	elasticache/redis-cluster-2  independent
//
// The example prints the order the runner will use for apply and for
// destroy (its dry-run waves), then really applies and destroys, printing
// when each unit starts and ends so the order can be checked by eye. It
// works offline: the provider is built on first run and served from a
// loopback registry, as in examples/parallel.
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
	"time"

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

type options struct {
	root        string
	latency     time.Duration
	padding     int64
	parallelism int
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("dag", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.root, "root", "", "where workdirs, the provider cache and logs live (default: the user cache dir)")
	fs.DurationVar(&o.latency, "latency", time.Second, "simulated cloud latency of creating one resource")
	fs.Int64Var(&o.padding, "provider-size", 0, "bytes of padding in the served provider")
	fs.IntVar(&o.parallelism, "parallelism", 4, "units run at once")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.parallelism < 1 {
		return nil, fmt.Errorf("-parallelism %d: want at least 1", o.parallelism)
	}
	if o.latency < 0 {
		return nil, fmt.Errorf("-latency %s: want 0 or more", o.latency)
	}
	if o.padding < 0 {
		return nil, fmt.Errorf("-provider-size %d: want 0 or more", o.padding)
	}
	root, err := demo.Root(o.root, "dag")
	if err != nil {
		return nil, err
	}
	o.root = root
	return o, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "root: %s\n", o.root)
	tf, err := demo.Terraform(ctx, o.root)
	if err != nil {
		return err
	}
	source, err := demo.WriteInfra(filepath.Join(o.root, "infra"))
	if err != nil {
		return err
	}
	prov, err := demo.ServeProvider(filepath.Join(o.root, "provider"), o.padding)
	if err != nil {
		return fmt.Errorf("serve the provider locally: %w", err)
	}
	defer prov.Close()
	cache, err := prov.OpenCache(filepath.Join(o.root, "plugin-cache"))
	if err != nil {
		return err
	}
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	units := stackUnits(source, o.latency)
	printUnits(stdout, units)

	tl := &timeline{w: stdout}
	// One runner per command: its log dir is per command, so destroy's
	// logs do not replace apply's.
	newRunner := func(cmd runner.Command) (*runner.Runner, error) {
		return runner.New(
			runner.WithWorkdirs(wds),
			runner.WithPluginCache(cache),
			runner.WithTerraform(tf),
			runner.WithParallelism(o.parallelism),
			runner.WithLogDir(filepath.Join(o.root, "logs", cmd.String())),
			runner.WithEvents(tl.event),
		)
	}
	cmds := []runner.Command{runner.Apply, runner.Destroy}
	runners := make([]*runner.Runner, len(cmds))
	for i, cmd := range cmds {
		if runners[i], err = newRunner(cmd); err != nil {
			return err
		}
		waves, err := runners[i].Order(cmd, units...)
		if err != nil {
			return err
		}
		printWaves(stdout, cmd, waves)
	}
	for i, cmd := range cmds {
		fmt.Fprintf(stdout, "\n%s:\n", cmd)
		tl.reset()
		start := time.Now()
		rep, err := runners[i].Run(ctx, cmd, units...)
		if rep != nil {
			summary(stdout, cmd, rep, time.Since(start))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return nil
}
