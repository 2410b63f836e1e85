//go:build unix

package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/naive"
)

// Compare runs n instances of Component the naive way -- in parallel, in
// one shared copy of the infra tree, with Terraform's own plugin cache and
// the provider from o's registry -- and prints how many survived, the
// provider downloads and the errors the rest died of. command is plan,
// apply or destroy; latency is each cluster's simulated creation time.
// The shared copy, under o.Root/compare, is removed when done.
func (o *Offline) Compare(ctx context.Context, w io.Writer, command string, n int, latency time.Duration) error {
	prov := o.Provider
	scratch := filepath.Join(o.Root, "compare", time.Now().Format("20060102-150405.000"))
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	// The shared copy is throwaway: leave no state or cache behind.
	defer os.RemoveAll(scratch)
	fmt.Fprintf(w, "naive: %s %d instances in one shared dir with Terraform's plugin cache...\n", command, n)
	downloadsBefore := prov.Downloads()
	res, err := naive.Run(ctx, naive.Config{
		Terraform: o.Terraform,
		Source:    o.Infra, // the whole tree: modules come along
		Component: Component,
		Scratch:   scratch,
		Instances: n,
		Command:   command,
		CLIConfig: prov.TerraformCLIConfig(),
		Env:       append(os.Environ(), prov.TerraformEnv()...),
		Vars:      func(i int) []byte { return VarsJSON(i+1, latency) },
		Files:     func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": BackendJSON()} },
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
		res.Succeeded, n, res.Wall.Round(10*time.Millisecond), prov.Downloads()-downloadsBefore)
	for _, l := range lines {
		fmt.Fprintf(w, "  %2dx %s\n", counts[l], l)
	}
	return nil
}
