package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

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
	root, err := resolveRoot(o.root)
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
