package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
)

// printReport prints the run's report (the table, or with -json the JSON form
// on stdout) and returns the run's error, or one saying that a stop kept
// units from starting.
func printReport(stdout, say io.Writer, o *options, rep *runner.Report, runErr error, downloads int64, st pluginc.Stats) error {
	if rep == nil {
		return runErr
	}
	if o.json {
		if err := writeJSON(stdout, rep, downloads); err != nil {
			return err
		}
	} else {
		summary(say, rep, downloads, st)
	}
	if ns := rep.NotStarted(); runErr == nil && len(ns) > 0 {
		return fmt.Errorf("stopped: %d of %d units never started", len(ns), len(rep.Results))
	}
	return runErr
}

// summary prints one row per unit and the totals, and the units that
// never started when a stop or a failure kept them from it.
func summary(w io.Writer, rep *runner.Report, downloads int64, st pluginc.Stats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tSTATUS\tDURATION\tLOCK WAIT\tLOG")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Unit, r.Status, r.Duration.Round(10*time.Millisecond), r.LockWait.Round(10*time.Millisecond), r.Log)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", r.Unit, r.Err)
		}
	}
	if ns := rep.NotStarted(); len(ns) > 0 {
		fmt.Fprintf(w, "never started: %s\n", strings.Join(ns, ", "))
	}
	fmt.Fprintf(w, "tfisolate: %d/%d succeeded in %s with %s %s; provider downloads this run: %d (cache hits %d)\n",
		rep.Count(runner.Succeeded), len(rep.Results), rep.Duration.Round(10*time.Millisecond), rep.Engine.Kind, rep.Engine.Version, downloads, st.Hits)
}

// writeJSON prints the runner's documented JSON form of the report, with
// the provider downloads of this run beside it.
func writeJSON(w io.Writer, rep *runner.Report, downloads int64) error {
	out := struct {
		Report    *runner.Report `json:"report"`
		Downloads int64          `json:"provider_downloads"`
	}{rep, downloads}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
