// Command buildengines builds the engine matrix's releases (testenv.Build)
// into the per-machine cache, one after another: CI (.ci/run) starts it
// in the background before vet and the tests, so the builds run beside
// the packages that need no engine. The tests build what is missing
// themselves, behind the same flock (a test that needs an engine this is
// building waits for it); this only starts it earlier. It prints each
// binary's path.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func main() {
	// SIGTERM too: .ci/run stops it so when its tests fail (a background
	// job of a script ignores SIGINT).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
		// Named as its own, as CI prints these between go test's lines.
		fmt.Printf("buildengines: %s: %s (%.0fs)\n", b.Name(), p, time.Since(start).Seconds())
	}
	return nil
}
