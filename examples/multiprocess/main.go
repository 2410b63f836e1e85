// Command multiprocess shows tfisolate's guarantees across OS processes:
// several processes (this binary, re-executed as workers) share ONE
// provider cache and ONE workdir root and apply overlapping sets of
// instances at the same time. With the defaults, three processes apply
// elasticache/redis-cluster-1..4, 3..6 and 5..8 of stack plat-ue2-dev.
//
// What it shows:
//   - the provider is downloaded once for all processes (the cache's
//     per-package flock; the others wait for it or find it installed),
//   - an instance two processes share is applied by one at a time (the
//     workdir's instance flock; the other waits, shown as lock wait) and
//     both succeed,
//   - every instance's state holds its resources.
//
// The parent builds the provider on first run and serves it from a loopback
// HTTPS registry; the workers reach it through the address and CA file the
// parent passes them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if cfg, ok := os.LookupEnv(workerEnv); ok {
		// A worker started by run: its result goes to stdout as JSON.
		err = worker(ctx, cfg, os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout)
	}
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "multiprocess:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	root        string
	procs       int
	per         int
	step        int
	parallelism int
	latency     time.Duration
	padding     int64
	json        bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("multiprocess", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.root, "root", "", "where workdirs, the provider cache and logs live (default: the user cache dir)")
	fs.IntVar(&o.procs, "procs", 3, "number of worker processes")
	fs.IntVar(&o.per, "per", 4, "instances each process applies")
	fs.IntVar(&o.step, "step", 2, "process p applies instances p*step+1 .. p*step+per (step < per: neighbours overlap)")
	fs.IntVar(&o.parallelism, "parallelism", 0, "units each process runs at once (default: -per)")
	fs.DurationVar(&o.latency, "latency", time.Second, "simulated cloud latency of creating one cluster")
	fs.Int64Var(&o.padding, "provider-size", 8<<20, "bytes of padding in the served provider")
	fs.BoolVar(&o.json, "json", false, "print the outcome as JSON on stdout; progress goes to stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.procs < 1:
		return nil, fmt.Errorf("-procs %d: want at least 1", o.procs)
	case o.per < 1:
		return nil, fmt.Errorf("-per %d: want at least 1", o.per)
	case o.step < 0:
		return nil, fmt.Errorf("-step %d: want 0 or more", o.step)
	case o.parallelism < 0:
		return nil, fmt.Errorf("-parallelism %d: want at least 1", o.parallelism)
	case o.latency < 0:
		return nil, fmt.Errorf("-latency %s: want 0 or more", o.latency)
	case o.padding < 0:
		return nil, fmt.Errorf("-provider-size %d: want 0 or more", o.padding)
	}
	if o.parallelism == 0 {
		o.parallelism = o.per
	}
	root, err := demo.Root(o.root, "multiprocess")
	if err != nil {
		return nil, err
	}
	o.root = root
	return o, nil
}

// instances returns the instance numbers process p applies.
func (o *options) instances(p int) []int {
	out := make([]int, o.per)
	for i := range out {
		out[i] = p*o.step + i + 1
	}
	return out
}
