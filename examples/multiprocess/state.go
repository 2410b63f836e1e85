package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/workdir"
)

// instanceState is what an instance's local state holds after the run.
type instanceState struct {
	Instance  string   `json:"instance"`
	Processes []int    `json:"processes"` // which processes applied it
	Resources []string `json:"resources"` // addresses, sorted
	Name      string   `json:"name"`      // the cluster's name attribute
	Error     string   `json:"error,omitempty"`
}

// tfstate is the part of a terraform state file read here.
type tfstate struct {
	Resources []struct {
		Module    string `json:"module"`
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Instances []struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"instances"`
	} `json:"resources"`
}

// readState reads instance i's local state from its workdir. It goes
// through Prepare, which takes the instance lock, so it never reads a state
// a process is still writing.
func readState(ctx context.Context, wds *workdir.Manager, source string, i int, latency time.Duration) instanceState {
	st := instanceState{Instance: instance(i)}
	w, err := wds.Prepare(ctx, cluster(i, source, latency).Workdir)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	res, name, err := parseState(filepath.Join(w.Dir, "terraform.tfstate"))
	err = errors.Join(err, w.Close())
	if err != nil {
		st.Error = err.Error()
	}
	st.Resources, st.Name = res, name
	return st
}

func parseState(path string) (resources []string, name string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var s tfstate
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, "", fmt.Errorf("state %s: %w", path, err)
	}
	for _, r := range s.Resources {
		addr := r.Type + "." + r.Name
		if r.Mode == "data" {
			addr = "data." + addr
		}
		if r.Module != "" {
			addr = r.Module + "." + addr
		}
		resources = append(resources, addr)
		if r.Type == "tfitest_item" && len(r.Instances) > 0 {
			name, _ = r.Instances[0].Attributes["name"].(string)
		}
	}
	slices.Sort(resources)
	return resources, name, nil
}
