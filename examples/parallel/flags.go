package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tfisolate/tfisolate/runner"
)

type options struct {
	n           int
	parallelism int
	command     runner.Command
	root        string
	json        bool
	compare     bool
	latency     time.Duration
	padding     int64
	throttle    int64
	live        string
	online      bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("parallel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 12, "number of instances (elasticache/redis-cluster-1..n)")
	fs.IntVar(&o.parallelism, "parallelism", 0, "units run at once (default: n)")
	cmd := fs.String("command", "apply", "plan, apply or destroy")
	fs.StringVar(&o.root, "root", "", "where workdirs, the provider cache and logs live (default: the user cache dir)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON on stdout instead of the table")
	fs.BoolVar(&o.compare, "compare", false, "first run the same instances the naive way and show both outcomes")
	fs.DurationVar(&o.latency, "latency", time.Second, "simulated cloud latency of creating one cluster")
	fs.Int64Var(&o.padding, "provider-size", 24<<20, "bytes of padding in the served provider, to make it as large as real ones")
	fs.Int64Var(&o.throttle, "throttle", 64<<20, "download speed limit of the loopback registry in bytes/s (0: none)")
	fs.StringVar(&o.live, "progress", "auto", "progress view: auto (live on a terminal), live or lines")
	fs.BoolVar(&o.online, "online", false, "use a provider from the public registry instead of the local one (needs internet)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *cmd {
	case "plan":
		o.command = runner.Plan
	case "apply":
		o.command = runner.Apply
	case "destroy":
		o.command = runner.Destroy
	default:
		return nil, fmt.Errorf("-command %q: want plan, apply or destroy", *cmd)
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
	if o.online && o.compare {
		return nil, errors.New("-compare serves its provider locally; use it without -online")
	}
	if o.live != "auto" && o.live != "live" && o.live != "lines" {
		return nil, fmt.Errorf("-progress %q: want auto, live or lines", o.live)
	}
	root, err := resolveRoot(o.root)
	if err != nil {
		return nil, err
	}
	o.root = root
	return o, nil
}
