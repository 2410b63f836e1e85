// Command buildengines builds the engine matrix's releases (testenv.Build)
// into the per-machine cache, one after another, before a test run: CI
// runs it first so that no test waits on a cold build while the suite
// loads the machine. The tests build what is missing themselves; this
// only does it earlier. It prints each binary's path.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/tfisolate/tfisolate/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "buildengines:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	for _, b := range testenv.Builds() {
		start := time.Now()
		p, err := b.Ensure(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s (%.0fs)\n", b.Name(), p, time.Since(start).Seconds())
	}
	return nil
}
