package tfcmd

import (
	"encoding/json"
	"fmt"
)

// ShowPlan builds terraform show -json of a saved plan; its stdout is
// captured (the document holds sensitive values in clear): read it with
// ParsePlan.
func ShowPlan(planFile string) Cmd {
	return Cmd{Args: []string{"show", "-json", "-no-color", planFile}, Capture: true}
}

// PlanDoc is the part of terraform show -json of a plan that tfisolate
// reads.
type PlanDoc struct {
	ResourceChanges []ResourceChange        `json:"resource_changes"`
	OutputChanges   map[string]OutputChange `json:"output_changes"`
}

// ResourceChange is one resource_changes entry.
type ResourceChange struct {
	Address string `json:"address"`
	Change  struct {
		Actions []string `json:"actions"`
		// Importing is set (not null) when the resource is imported.
		Importing json.RawMessage `json:"importing"`
	} `json:"change"`
}

// Imported reports whether the change imports the resource.
func (rc ResourceChange) Imported() bool {
	return len(rc.Change.Importing) > 0 && string(rc.Change.Importing) != "null"
}

// OutputChange is one output_changes entry.
type OutputChange struct {
	Change struct {
		Actions []string `json:"actions"`
	} `json:"change"`
}

// ParsePlan reads terraform show -json of a plan.
func ParsePlan(doc []byte) (*PlanDoc, error) {
	var p PlanDoc
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, fmt.Errorf("read plan JSON: %w", err)
	}
	return &p, nil
}
