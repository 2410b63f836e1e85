// Command parallel is tfisolate's main job: the original request's
// scenario, offline. Stack plat-ue2-dev runs twelve instances
// elasticache/redis-cluster-1..12 of one component, applied in parallel,
// each in its own workdir, all sharing one provider cache.
//
// With no flags it builds a small provider on first run, serves it from a
// loopback registry, and applies. -compare first runs the same instances the
// naive way (in parallel in one shared source dir with Terraform's plugin
// cache) and prints both outcomes. -command destroy cleans up.
//
// Ctrl-C works the way a terminal user expects: the first press lets the
// running units finish and starts no new one, the second interrupts
// terraform (it stops and releases its state locks), the third kills it.
// The summary lists the units that never started. SIGTERM interrupts.
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
	// SIGTERM cancels the context: for the runner, the same as a second
	// Ctrl-C. Ctrl-C itself climbs the stop ladder (see run).
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

func run(ctx context.Context, args []string, stdout io.Writer) error {
	ctrlC := make(chan os.Signal, 3)
	signal.Notify(ctrlC, os.Interrupt)
	defer signal.Stop(ctrlC)
	return runWithCtrlC(ctx, args, stdout, ctrlC)
}

// runWithCtrlC is the example; each value from ctrlC is a Ctrl-C.
func runWithCtrlC(ctx context.Context, args []string, stdout io.Writer, ctrlC <-chan os.Signal) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	// With -json, stdout carries only the report; the story goes to stderr.
	say := &syncWriter{w: stdout}
	if o.json {
		say = &syncWriter{w: os.Stderr}
	}
	fmt.Fprintf(say, "root: %s\n", o.root)
	view := newProgress(say, o.live, unitIDs(o.n))
	// One Stop for the runner; each Ctrl-C is a Request on it.
	stop := runner.NewStop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	endLadder := onCtrlC(ctrlC, stop, cancel, view.note)
	defer endLadder()

	tf, err := demo.Terraform(ctx, o.root)
	if err != nil {
		return err
	}
	source, cache, closeProviders, err := providers(ctx, o, say, tf)
	if err != nil {
		return err
	}
	defer closeProviders()
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(tf),
		runner.WithParallelism(o.parallelism),
		runner.WithLogDir(filepath.Join(o.root, "logs", o.command.String())),
		runner.WithEvents(view.event),
		runner.WithStop(stop),
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(say, "tfisolate: %s %d instances of %s in stack %s, parallelism %d\n",
		o.command, o.n, demo.ComponentName, demo.Stack, o.parallelism)
	before := cache.Stats()
	view.start(ctx)
	rep, runErr := r.Run(ctx, o.command, demo.Units(source, o.n, o.latency)...)
	view.stop()
	endLadder()
	if rep == nil {
		return runErr
	}
	st := cache.Stats()
	if o.json {
		err = writeJSON(stdout, rep, st.Downloads-before.Downloads)
	} else {
		summary(say, rep, st.Downloads-before.Downloads, st)
	}
	if err != nil {
		return err
	}
	if ns := rep.NotStarted(); runErr == nil && len(ns) > 0 {
		return fmt.Errorf("stopped: %d of %d units never started", len(ns), len(rep.Results))
	}
	return runErr
}
