//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/internal/naive"
)

// compare runs the instances the naive way -- in parallel, in one shared
// copy of the component, with Terraform's own plugin cache -- and prints
// how many survived and the errors the rest died of.
func compare(ctx context.Context, w io.Writer, o *options, tf, source string, prov *demo.Provider) error {
	scratch := filepath.Join(o.root, "compare", time.Now().Format("20060102-150405.000"))
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	// The shared copy is throwaway: leave no state or cache behind.
	defer os.RemoveAll(scratch)
	fmt.Fprintf(w, "naive: %s %d instances in one shared dir with Terraform's plugin cache...\n", o.command, o.n)
	downloadsBefore := prov.Downloads()
	res, err := naive.Run(ctx, naive.Config{
		Terraform: tf,
		Source:    filepath.Dir(filepath.Dir(filepath.Dir(source))), // the infra root: modules come along
		Component: demo.Component,
		Scratch:   scratch,
		Instances: o.n,
		Command:   o.command.String(),
		CLIConfig: prov.TerraformCLIConfig(),
		Env:       append(os.Environ(), prov.TerraformEnv()...),
		Vars:      func(i int) []byte { return demo.VarsJSON(i+1, o.latency) },
		Files:     func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
	}, naive.Shared)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, oc := range res.Outcomes {
		for _, l := range oc.ErrorLines {
			counts[l]++
		}
		if oc.Err != nil && len(oc.ErrorLines) == 0 {
			counts[oc.Err.Error()]++
		}
	}
	lines := make([]string, 0, len(counts))
	for l := range counts {
		lines = append(lines, l)
	}
	sort.Slice(lines, func(i, j int) bool {
		return counts[lines[i]] > counts[lines[j]] || counts[lines[i]] == counts[lines[j]] && lines[i] < lines[j]
	})
	fmt.Fprintf(w, "naive: %d/%d succeeded in %s; provider downloads: %d\n",
		res.Succeeded, o.n, res.Wall.Round(10*time.Millisecond), prov.Downloads()-downloadsBefore)
	for _, l := range lines {
		fmt.Fprintf(w, "  %2dx %s\n", counts[l], l)
	}
	return nil
}
