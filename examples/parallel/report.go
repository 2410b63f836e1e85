package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
)

// summary prints one row per unit and the totals.
func summary(w io.Writer, rep *runner.Report, wall time.Duration, downloads int64, st pluginc.Stats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tSTATUS\tDURATION\tLOCK WAIT\tLOG")
	ok := 0
	for _, r := range rep.Results {
		if r.Status == runner.Succeeded {
			ok++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Unit, r.Status, r.Duration.Round(10*time.Millisecond), r.LockWait.Round(10*time.Millisecond), r.Log)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", r.Unit, r.Err)
		}
	}
	fmt.Fprintf(w, "tfisolate: %d/%d succeeded in %s; provider downloads this run: %d (cache hits %d)\n",
		ok, len(rep.Results), wall.Round(10*time.Millisecond), downloads, st.Hits)
}

type jsonResult struct {
	Unit       string  `json:"unit"`
	Status     string  `json:"status"`
	Error      string  `json:"error,omitempty"`
	Seconds    float64 `json:"duration_seconds"`
	LockWait   float64 `json:"lock_wait_seconds"`
	LockHolder string  `json:"lock_holder,omitempty"`
	HasChanges bool    `json:"has_changes"`
	Log        string  `json:"log"`
}

// writeJSON prints the report as one JSON document.
func writeJSON(w io.Writer, rep *runner.Report, wall time.Duration, downloads int64) error {
	out := struct {
		Succeeded int          `json:"succeeded"`
		Units     int          `json:"units"`
		Wall      float64      `json:"wall_seconds"`
		Downloads int64        `json:"provider_downloads"`
		Results   []jsonResult `json:"results"`
	}{Units: len(rep.Results), Wall: wall.Seconds(), Downloads: downloads}
	for _, r := range rep.Results {
		if r.Status == runner.Succeeded {
			out.Succeeded++
		}
		jr := jsonResult{Unit: r.Unit, Status: r.Status.String(), Seconds: r.Duration.Seconds(),
			LockWait: r.LockWait.Seconds(), LockHolder: r.LockHolder, HasChanges: r.HasChanges, Log: r.Log}
		if r.Err != nil {
			jr.Error = r.Err.Error()
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
