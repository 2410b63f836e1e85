package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/tfisolate/tfisolate/runner"
)

// run is the example with Ctrl-C from the terminal.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	ctrlC := make(chan os.Signal, 3)
	signal.Notify(ctrlC, os.Interrupt)
	defer signal.Stop(ctrlC)
	return runWithCtrlC(ctx, args, stdout, ctrlC)
}

// onCtrlC climbs stop's ladder, one request per value from ctrlC, and
// says so through note, until the returned function is called; that
// function returns once the ladder's goroutine is gone and may be called
// more than once. Reaching Interrupt also cancels ctx (through cancel),
// which stops what is not a unit: the provider build, -compare.
func onCtrlC(ctrlC <-chan os.Signal, stop *runner.Stop, cancel context.CancelCauseFunc, note func(string)) (end func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { ladder(ctrlC, done, stop, cancel, note) })
	return sync.OnceFunc(func() { close(done); wg.Wait() })
}

// ladder turns each Ctrl-C into the next request on the stop ladder until
// done is closed. A press already queued is handled even once the run is
// over, so none is lost.
func ladder(ctrlC <-chan os.Signal, done <-chan struct{}, stop *runner.Stop, cancel context.CancelCauseFunc, note func(string)) {
	for {
		select {
		case <-ctrlC:
		default:
			select {
			case <-ctrlC:
			case <-done:
				return
			}
		}
		before := stop.Level()
		switch level := stop.Request(); {
		case level == before: // already at Kill
		case level == runner.Drain:
			note("stopping: no new units start; Ctrl-C again to interrupt terraform")
		case level == runner.Interrupt:
			cancel(runner.ErrInterrupted)
			note("interrupting terraform: it stops and releases its state locks; Ctrl-C again to kill it")
		case level == runner.Kill:
			note("killing terraform")
		}
	}
}
