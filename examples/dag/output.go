package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tfisolate/tfisolate/runner"
)

// printUnits lists the units and what each depends on.
func printUnits(w io.Writer, units []runner.Unit) {
	fmt.Fprintln(w, "units:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, u := range units {
		deps := "independent"
		if len(u.DependsOn) > 0 {
			deps = "depends on " + strings.Join(u.DependsOn, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\n", unitID(u.Workdir.Instance), deps)
	}
	tw.Flush()
}

// printWaves prints the runner's dry-run order for cmd.
func printWaves(w io.Writer, cmd runner.Command, waves [][]string) {
	fmt.Fprintf(w, "%s order (dry run):\n", cmd)
	for i, wave := range waves {
		fmt.Fprintf(w, "  wave %d: %s\n", i+1, strings.Join(wave, ", "))
	}
}

// timeline prints a line when a unit starts (gets a slot and takes its
// instance lock) and when it ends, with the time since the command began.
// The runner delivers events one at a time in the order they happened, so
// the lines are in that order too.
type timeline struct {
	w io.Writer

	mu    sync.Mutex
	start time.Time
}

func (t *timeline) reset() {
	t.mu.Lock()
	t.start = time.Now()
	t.mu.Unlock()
}

func (t *timeline) event(ev runner.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := ev.Time.Sub(t.start).Seconds()
	switch ev.Phase {
	case runner.PhasePrepare:
		fmt.Fprintf(t.w, "  %7.3fs  start  %s\n", at, ev.Unit)
	case runner.PhaseDone:
		fmt.Fprintf(t.w, "  %7.3fs  end    %s  %s\n", at, ev.Unit, ev.Status)
	}
}

// summary prints one row per unit and the totals of one command.
func summary(w io.Writer, cmd runner.Command, rep *runner.Report, wall time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  UNIT\tSTATUS\tDURATION\tLOG")
	ok := 0
	for _, r := range rep.Results {
		if r.Status == runner.Succeeded {
			ok++
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Unit, r.Status, r.Duration.Round(10*time.Millisecond), r.Log)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "  %s: %v\n", r.Unit, r.Err)
		}
	}
	fmt.Fprintf(w, "%s: %d/%d succeeded in %s\n", cmd, ok, len(rep.Results), wall.Round(10*time.Millisecond))
}
