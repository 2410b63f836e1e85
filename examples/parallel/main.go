// Command parallel is tfisolate's main job: the original request's
// scenario, offline. Stack plat-ue2-dev runs twelve instances
// elasticache/redis-cluster-1..12 of one component, applied in parallel,
// each in its own workdir, all sharing one provider cache.
//
// With no flags it builds a small provider on first run, serves it from a
// loopback registry, and applies. -compare first runs the same instances the
// naive way (in parallel in one shared source dir with Terraform's plugin
// cache) and prints both outcomes. -command destroy cleans up.
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
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "parallel:", err)
		}
		os.Exit(1)
	}
}

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
	root, err := demo.Root(o.root, "parallel")
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
	// With -json, stdout carries only the report; the story goes to stderr.
	say := stdout
	if o.json {
		say = os.Stderr
	}
	fmt.Fprintf(say, "root: %s\n", o.root)

	tf, err := demo.Terraform(ctx, o.root)
	if err != nil {
		return err
	}
	infra := filepath.Join(o.root, "infra")
	source, err := demo.WriteInfra(infra)
	if err != nil {
		return err
	}
	var cache *pluginc.Cache
	if o.online {
		source = filepath.Join(infra, filepath.FromSlash(demo.OnlineComponent))
		cache, err = pluginc.Open(filepath.Join(o.root, "plugin-cache"), pluginc.WithSource(pluginc.Registry()))
	} else {
		prov, perr := demo.ServeProvider(filepath.Join(o.root, "provider"), o.padding)
		if perr != nil {
			return fmt.Errorf("serve the provider locally: %w", perr)
		}
		defer prov.Close()
		prov.SetThrottle(o.throttle)
		if o.compare {
			if err := compare(ctx, say, o, tf, source, prov); err != nil {
				return err
			}
		}
		cache, err = prov.OpenCache(filepath.Join(o.root, "plugin-cache"))
	}
	if err != nil {
		return err
	}
	units := demo.Units(source, o.n, o.latency)
	wds, err := workdir.New(filepath.Join(o.root, "workdirs"))
	if err != nil {
		return err
	}
	view := newProgress(say, o.live, unitIDs(units))
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(tf),
		runner.WithParallelism(o.parallelism),
		runner.WithLogDir(filepath.Join(o.root, "logs", o.command.String())),
		runner.WithEvents(view.event),
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(say, "tfisolate: %s %d instances of %s in stack %s, parallelism %d\n",
		o.command, o.n, demo.ComponentName, demo.Stack, o.parallelism)
	before := cache.Stats()
	view.start(ctx)
	start := time.Now()
	rep, runErr := r.Run(ctx, o.command, units...)
	wall := time.Since(start)
	view.stop()
	if rep == nil {
		return runErr
	}
	st := cache.Stats()
	if o.json {
		if err := writeJSON(stdout, rep, st.Downloads-before.Downloads); err != nil {
			return err
		}
	} else {
		summary(stdout, rep, wall, st.Downloads-before.Downloads, st)
	}
	return runErr
}

func unitIDs(units []runner.Unit) []string {
	ids := make([]string, len(units))
	for i, u := range units {
		ids[i] = u.Workdir.Stack + "/" + u.Workdir.Instance
	}
	return ids
}
