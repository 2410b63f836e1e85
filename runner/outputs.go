package runner

import (
	"context"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// keepOutputs returns the outputs an apply reported. The
// machine-readable UI leaves sensitive values out; when there are any,
// terraform output -json reads them all (one more process, only then),
// so that dependents get every value.
func (x *unitRun) keepOutputs(ctx context.Context, outs map[string]tfcmd.Output) (map[string]OutputValue, error) {
	for _, o := range outs {
		if o.Sensitive {
			return x.readOutputs(ctx)
		}
	}
	return x.checkOutputs(outs)
}

// readOutputs runs terraform output -json and returns the outputs.
func (x *unitRun) readOutputs(ctx context.Context) (map[string]OutputValue, error) {
	r, err := x.run(ctx, PhaseOutput, "output", func(string) tfcmd.Cmd { return tfcmd.OutputJSON() })
	if err != nil {
		return nil, err
	}
	outs, err := tfcmd.ParseOutputs(r.Stdout)
	if err != nil {
		return nil, fmt.Errorf("terraform output: %w", err)
	}
	return x.checkOutputs(outs)
}

// checkOutputs returns outs as the unit's outputs (never nil), and an
// error for a unit whose outputs a dependent reads and whose state holds
// none of the outputs its configuration declares (it was never applied),
// when it is outside the Run's selection or planned in this Run (see
// plannedOutputs).
func (x *unitRun) checkOutputs(outs map[string]tfcmd.Output) (map[string]OutputValue, error) {
	vals := outputValues(outs)
	if vals == nil {
		vals = map[string]OutputValue{}
	}
	if len(outs) == 0 && x.tree != nil {
		root := x.tree.Modules[x.tree.Root]
		declared := 0
		if root != nil && root.Config != nil {
			declared = len(root.Config.Outputs)
		}
		switch {
		case declared == 0:
		case x.rs.outsideOutputs != nil && x.rs.outsideOutputs[x.idx]:
			return vals, fmt.Errorf("%w: unit %s: its state holds none of the %d outputs its configuration declares; apply it first (it is outside this Run's selection)",
				ErrNotApplied, x.id, declared)
		case x.rs.plannedOutputs != nil && x.rs.plannedOutputs[x.idx]:
			// The dependent's error names the unit ("dependency ID: ...").
			return vals, fmt.Errorf("%w: its state holds none of the %d outputs its configuration declares: it is planned in this Run "+
				"but has never been applied, and its outputs are not known until it is applied; apply it first, then plan its dependents",
				ErrNotApplied, declared)
		}
	}
	return vals, nil
}
