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
	root, err := resolveRoot(o.root)
	if err != nil {
		return nil, err
	}
	o.root = root
	return o, nil
}
