package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tfisolate/tfisolate/runner"
)

// printOutcome prints the per-process results, the download count and what
// each instance's state holds.
func printOutcome(w io.Writer, o *outcome) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROC\tPID\tINSTANCE\tSTATUS\tDURATION\tLOCK WAIT")
	for _, p := range o.Processes {
		for _, u := range p.results() {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", p.Process, p.PID, u.Unit, u.Status, round(u.Duration), round(u.LockWait))
		}
	}
	tw.Flush()
	for _, p := range o.Processes {
		for _, u := range p.results() {
			if u.Err != nil {
				fmt.Fprintf(w, "process %d, %s: %v\n", p.Process, u.Unit, u.Err)
			}
		}
		if p.Error != "" {
			fmt.Fprintf(w, "process %d: %s\n", p.Process, p.Error)
		}
	}

	fmt.Fprintln(w)
	for _, p := range o.Processes {
		ok := 0
		if p.Report != nil {
			ok = p.Report.Count(runner.Succeeded)
		}
		fmt.Fprintf(w, "process %d (pid %d): %d/%d succeeded; provider cache: %d downloaded, %d hits, %d waits on another process's download\n",
			p.Process, p.PID, ok, len(p.results()), p.Cache.Downloads, p.Cache.Hits, p.Cache.Waits)
	}
	cache := "warm cache: 0 expected"
	if o.ColdCache {
		cache = "cold cache: 1 expected, one package for all processes"
	}
	fmt.Fprintf(w, "provider downloads from the registry: %d (%s)\n", o.Downloads, cache)

	fmt.Fprintln(w)
	fmt.Fprintln(w, "state of each instance:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range o.Instances {
		procs := make([]string, len(s.Processes))
		for k, p := range s.Processes {
			procs[k] = fmt.Sprint(p)
		}
		what := fmt.Sprintf("%d resources (%s), name %s", len(s.Resources), strings.Join(s.Resources, ", "), s.Name)
		if s.Error != "" {
			what = "error: " + s.Error
		}
		fmt.Fprintf(tw, "  %s\tapplied by process %s\t%s\n", s.Instance, strings.Join(procs, " and "), what)
	}
	tw.Flush()
	verdict := "every process applied every one of its instances"
	if !o.ok() {
		verdict = "NOT every process and instance succeeded"
	}
	fmt.Fprintf(w, "%s in %s\n", verdict, round(time.Duration(o.WallSeconds*float64(time.Second))))
}

// results are the process's unit results; none when it reported no run.
func (p *procResult) results() []runner.Result {
	if p.Report == nil {
		return nil
	}
	return p.Report.Results
}

func round(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
