package runner

import (
	"context"
	"encoding/json"
	"fmt"
)

// keepOutputs puts the outputs an apply reported into the Result. The
// machine-readable UI leaves sensitive values out; when there are any,
// terraform output -json reads them all (one more process, only then),
// so that dependents get every value.
func (x *unitRun) keepOutputs(ctx context.Context, outs map[string]OutputValue) error {
	for _, o := range outs {
		if o.Sensitive {
			return x.readOutputs(ctx)
		}
	}
	if outs == nil {
		outs = map[string]OutputValue{}
	}
	x.res.Outputs = outs
	if len(outs) == 0 && x.rs.outsideOutputs != nil && x.rs.outsideOutputs[x.idx] && x.tree != nil {
		if root := x.tree.Modules[x.tree.Root]; root != nil && root.Config != nil && len(root.Config.Outputs) > 0 {
			return fmt.Errorf("%w: unit %s: its state holds none of the %d outputs its configuration declares; apply it first (it is outside this Run's selection)",
				ErrNotApplied, x.id, len(root.Config.Outputs))
		}
	}
	return nil
}

// readOutputs runs terraform output -json into the Result.
func (x *unitRun) readOutputs(ctx context.Context) error {
	r, err := x.run(ctx, PhaseOutput, "output", func(string) []string { return outputArgs() }, runOpts{capture: true})
	if err != nil {
		return err
	}
	outs, err := parseOutputs(r.stdout)
	if err != nil {
		return fmt.Errorf("terraform output: %w", err)
	}
	x.res.Outputs = outs
	if len(outs) == 0 && x.rs.outsideOutputs != nil && x.rs.outsideOutputs[x.idx] && x.tree != nil {
		if root := x.tree.Modules[x.tree.Root]; root != nil && root.Config != nil && len(root.Config.Outputs) > 0 {
			return fmt.Errorf("%w: unit %s: its state holds none of the %d outputs its configuration declares; apply it first (it is outside this Run's selection)",
				ErrNotApplied, x.id, len(root.Config.Outputs))
		}
	}
	return nil
}

// parseOutputs reads terraform output -json.
func parseOutputs(b []byte) (map[string]OutputValue, error) {
	var raw map[string]uiOutput
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("read outputs: %w", err)
	}
	outs := make(map[string]OutputValue, len(raw))
	for k, o := range raw {
		outs[k] = OutputValue{Value: o.Value, Type: o.Type, Sensitive: o.Sensitive}
	}
	return outs, nil
}
