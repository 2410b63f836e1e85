package tfcmd

import (
	"encoding/json"
	"fmt"
)

// ShowPlanOptions are show -json's of a saved plan.
type ShowPlanOptions struct {
	// PlanFile is the saved plan.
	PlanFile string
	// Vars: as InitOptions.Vars (an engine that loads the configuration's
	// module sources from variables to show a plan).
	Vars Vars
}

// ShowPlan builds terraform show -json of a saved plan; its stdout is
// captured (the document holds sensitive values in clear): read it with
// ParsePlan.
func ShowPlan(o ShowPlanOptions) Cmd {
	args := append([]string{"show", "-json", "-no-color"}, o.Vars.Args()...)
	return Cmd{Args: append(args, o.PlanFile), Capture: true}
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
