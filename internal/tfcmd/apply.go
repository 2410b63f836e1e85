package tfcmd

import "strconv"

// ApplyOptions shape terraform apply (without a saved plan).
type ApplyOptions struct {
	Change
	// Replace are -replace addresses, in order.
	Replace []string
}

// Apply builds terraform apply -auto-approve with the machine-readable
// UI, whose outputs message gives the outputs (Result.Outputs).
func Apply(o ApplyOptions) Cmd {
	args := append([]string{"apply", "-auto-approve", "-json"}, o.Change.args()...)
	return Cmd{Args: append(args, replaceArgs(o.Replace)...), JSON: true}
}

// ApplyPlanOptions shape the apply of a saved plan: variables, targets,
// replacements and the refresh mode are in the plan, and terraform
// refuses them beside it, so they have no field here.
type ApplyPlanOptions struct {
	LockTimeout string
	Lock        *bool
	Parallelism int
	// PlanFile is the saved plan; it comes last.
	PlanFile string
}

// ApplyPlan builds terraform apply of a saved plan.
func ApplyPlan(o ApplyPlanOptions) Cmd {
	args := []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=" + o.LockTimeout}
	if o.Lock != nil {
		args = append(args, "-lock="+strconv.FormatBool(*o.Lock))
	}
	if o.Parallelism > 0 {
		args = append(args, "-parallelism="+strconv.Itoa(o.Parallelism))
	}
	return Cmd{Args: append(args, o.PlanFile), JSON: true}
}
