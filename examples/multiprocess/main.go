package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
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

// instance is the name of the i-th cluster (1-based) in the stack.
func instance(i int) string { return fmt.Sprintf("elasticache/redis-cluster-%d", i) }

// cluster is the unit of the i-th cluster of the component at source,
// with the files a stack-driven wrapper would generate for it. Its ID is
// the instance: each process runs one stack.
func cluster(i int, source string, latency time.Duration) runner.Unit {
	return runner.Unit{ID: instance(i), Workdir: workdir.Spec{
		Stack:    "plat-ue2-dev",
		Instance: instance(i),
		Source:   source,
		Files: map[string][]byte{
			"backend.tf.json":            []byte(`{"terraform": {"backend": {"local": {}}}}`),
			"terraform.auto.tfvars.json": fmt.Appendf(nil, `{"name": "plat-ue2-dev-redis-cluster-%d", "latency_seconds": %g}`, i, latency.Seconds()),
		},
	}}
}
