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

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// SIGTERM cancels the context: for the runner, a second Ctrl-C.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "parallel:", err)
		}
		os.Exit(1)
	}
}

// runWithCtrlC is the example; each value from ctrlC is a Ctrl-C.
func runWithCtrlC(ctx context.Context, args []string, stdout io.Writer, ctrlC <-chan os.Signal) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	say, view := newViews(stdout, o) // the story; the progress view
	fmt.Fprintf(say, "root: %s\n", o.root)
	stop := runner.NewStop() // each Ctrl-C is a Request on it
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	endLadder := onCtrlC(ctrlC, stop, cancel, view.note)
	defer endLadder()

	// The offline stand-in (offline.go): terraform, the component, the registry.
	env, err := startOffline(ctx, o, say)
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
		runner.WithLogDir(filepath.Join(o.root, "logs", o.command.String())),
		runner.WithEvents(view.event),
		runner.WithStop(stop),
	)
	if err != nil {
		return err
	}
	units := clusters(env.source, o.n, o.latency)
	fmt.Fprintf(say, "tfisolate: %s %d instances of elasticache in stack plat-ue2-dev, parallelism %d\n", o.command, o.n, o.parallelism)
	before := cache.Stats()
	view.start(ctx, units)
	rep, runErr := r.Run(ctx, o.command, units...)
	view.stop()
	endLadder()
	return printReport(stdout, say, o, rep, runErr, cache.Stats().Downloads-before.Downloads, cache.Stats())
}

// clusters are the units elasticache/redis-cluster-1..n of the component
// at source, with the files a stack-driven wrapper would generate.
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
