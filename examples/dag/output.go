package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
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
func summary(w io.Writer, rep *runner.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  UNIT\tSTATUS\tDURATION\tLOG")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Unit, r.Status, r.Duration.Round(10*time.Millisecond), r.Log)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "  %s: %v\n", r.Unit, r.Err)
		}
	}
	fmt.Fprintf(w, "%s: %d/%d succeeded in %s\n", rep.Command, rep.Count(runner.Succeeded), len(rep.Results), rep.Duration.Round(10*time.Millisecond))
}

// printDataFlow prints the VPC's outputs, then, for each cluster, the
// network it was applied with: its own vpc_id and subnet_ids outputs,
// which echo the variables its Generate wrote.
func printDataFlow(w io.Writer, rep *runner.Report) {
	fmt.Fprintln(w, "data flow:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	results := rep.Results
	if r, ok := rep.Result(unitID(vpc)); ok {
		results = append([]runner.Result{r}, slices.DeleteFunc(slices.Clone(results), func(o runner.Result) bool { return o.Unit == r.Unit })...)
	}
	for _, r := range results {
		what := "received"
		if r.Unit == unitID(vpc) {
			what = "outputs"
		}
		got := "nothing (not in the VPC)"
		if _, ok := r.Outputs["vpc_id"]; ok {
			got = "vpc_id=" + compact(r.Outputs["vpc_id"].Value) + " subnet_ids=" + compact(r.Outputs["subnet_ids"].Value)
		}
		if r.Status != runner.Succeeded {
			got = "nothing: " + r.Status.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Unit, what, got)
	}
	tw.Flush()
}

// compact renders a JSON value on one line.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
