package runner

import (
	"context"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// keepOutputs puts the outputs an apply reported into the Result. The
// machine-readable UI leaves sensitive values out; when there are any,
// terraform output -json reads them all (one more process, only then),
// so that dependents get every value.
func (x *unitRun) keepOutputs(ctx context.Context, outs map[string]tfcmd.Output) error {
	for _, o := range outs {
		if o.Sensitive {
			return x.readOutputs(ctx)
		}
	}
	return x.setOutputs(outs)
}

// readOutputs runs terraform output -json into the Result.
func (x *unitRun) readOutputs(ctx context.Context) error {
	r, err := x.run(ctx, PhaseOutput, "output", func(string) tfcmd.Cmd { return tfcmd.OutputJSON() })
	if err != nil {
		return err
	}
	outs, err := tfcmd.ParseOutputs(r.Stdout)
	if err != nil {
		return fmt.Errorf("terraform output: %w", err)
	}
	return x.setOutputs(outs)
}

// setOutputs puts outs into the Result. A unit outside the Run's
// selection whose outputs a dependent reads, and whose state holds none
// of the outputs its configuration declares, was never applied.
func (x *unitRun) setOutputs(outs map[string]tfcmd.Output) error {
	x.res.Outputs = outputValues(outs)
	if x.res.Outputs == nil {
		x.res.Outputs = map[string]OutputValue{}
	}
	if len(outs) == 0 && x.rs.outsideOutputs != nil && x.rs.outsideOutputs[x.idx] && x.tree != nil {
		if root := x.tree.Modules[x.tree.Root]; root != nil && root.Config != nil && len(root.Config.Outputs) > 0 {
			return fmt.Errorf("%w: unit %s: its state holds none of the %d outputs its configuration declares; apply it first (it is outside this Run's selection)",
				ErrNotApplied, x.id, len(root.Config.Outputs))
		}
	}
	return nil
}
