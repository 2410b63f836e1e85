package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tfisolate/tfisolate/runner"
)

// printPlans prints one row per saved plan: what it would do, terraform's
// way (+add ~change -destroy), and where the plan file is; then the
// totals and the errors of units whose plan failed.
func printPlans(w io.Writer, rep *runner.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tPLAN\tPLAN FILE")
	var add, change, destroy int
	for _, r := range rep.Results {
		p := r.Plan
		if p == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\n", r.Unit, r.Status)
			continue
		}
		add, change, destroy = add+p.Add, change+p.Change, destroy+p.Destroy
		fmt.Fprintf(tw, "%s\t+%d ~%d -%d\t%s\n", r.Unit, p.Add, p.Change, p.Destroy, p.File)
	}
	tw.Flush()
	printErrors(w, rep)
	fmt.Fprintf(w, "plan: %d/%d saved in %s: +%d ~%d -%d\n", rep.Count(runner.Succeeded), len(rep.Results),
		rep.Duration.Round(10*time.Millisecond), add, change, destroy)
}

// printApplied prints each applied unit's status and its outputs, then
// the totals.
func printApplied(w io.Writer, rep *runner.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tSTATUS\tOUTPUTS")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Unit, r.Status, outputs(r.Outputs))
	}
	tw.Flush()
	printErrors(w, rep)
	fmt.Fprintf(w, "apply: %d/%d applied in %s\n", rep.Count(runner.Succeeded), len(rep.Results), rep.Duration.Round(10*time.Millisecond))
}

func printErrors(w io.Writer, rep *runner.Report) {
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", r.Unit, r.Err)
		}
	}
}

// outputs renders outputs as name=value pairs, values as compact JSON.
func outputs(outs map[string]runner.OutputValue) string {
	var pairs []string
	for name, o := range outs {
		v := "(sensitive)"
		if !o.Sensitive {
			var b bytes.Buffer
			if json.Compact(&b, o.Value) != nil {
				b.Reset()
				b.Write(o.Value)
			}
			v = b.String()
		}
		pairs = append(pairs, name+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, " ")
}
