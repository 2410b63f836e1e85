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
)

// main runs the example (run, in main.go) on the command line; Ctrl-C or
// SIGTERM cancels it, which interrupts terraform.
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

type options struct {
	root        string
	n           int
	parallelism int
	latency     time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("planapply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.root, "root", "", "where workdirs, the provider cache and logs live (default: the user cache dir)")
	fs.IntVar(&o.n, "n", 12, "number of instances (elasticache/redis-cluster-1..n)")
	fs.IntVar(&o.parallelism, "parallelism", 0, "units run at once (default: n)")
	fs.DurationVar(&o.latency, "latency", time.Second, "simulated cloud latency of creating one cluster")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.n < 1 {
		return nil, fmt.Errorf("-n %d: want at least 1", o.n)
	}
	if o.parallelism == 0 {
		o.parallelism = o.n
	}
	if o.parallelism < 1 {
		return nil, fmt.Errorf("-parallelism %d: want at least 1", o.parallelism)
	}
	if o.latency < 0 {
		return nil, fmt.Errorf("-latency %s: want 0 or more", o.latency)
	}
	root, err := resolveRoot(o.root)
	if err != nil {
		return nil, err
	}
	o.root = root
	return o, nil
}
