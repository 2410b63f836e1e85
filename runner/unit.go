package runner

import (
	"github.com/tfisolate/tfisolate/workdir"
)

// Unit is one root-module instance to run.
type Unit struct {
	// ID names the unit in DependsOn, filters, events and the report.
	// Empty means Workdir.Stack + "/" + Workdir.Instance.
	ID string
	// Workdir says what to prepare: stack, instance, component source and
	// generated files.
	Workdir workdir.Spec
	// Workspace, if set, is selected (created if missing) before the
	// command runs.
	Workspace string
	// DependsOn lists the IDs of units that must be applied before this
	// one (and destroyed after it).
	DependsOn []string
}

func (u *Unit) id() string {
	if u.ID != "" {
		return u.ID
	}
	if u.Workdir.Stack == "" && u.Workdir.Instance == "" {
		return ""
	}
	return u.Workdir.Stack + "/" + u.Workdir.Instance
}

// unitGraph validates the units and builds their graph.
func unitGraph(units []Unit) (*graph, error) {
	ids := make([]string, len(units))
	deps := make([][]string, len(units))
	for i := range units {
		ids[i] = units[i].id()
		deps[i] = units[i].DependsOn
	}
	return newGraph(ids, deps)
}
