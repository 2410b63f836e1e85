package tfcmd

// PlanOptions shape terraform plan.
type PlanOptions struct {
	Change
	// Replace are -replace addresses, in order.
	Replace []string
	// Destroy plans a destroy (-destroy).
	Destroy bool
	// Out saves the plan to this file (-out).
	Out string
}

// Plan builds terraform plan with the machine-readable UI and
// -detailed-exitcode: exit code 2 is a success with changes
// (Result.ExitCode tells).
func Plan(o PlanOptions) Cmd {
	args := append([]string{"plan", "-json", "-detailed-exitcode"}, o.Change.args()...)
	args = append(args, replaceArgs(o.Replace)...)
	if o.Destroy {
		args = append(args, "-destroy")
	}
	if o.Out != "" {
		args = append(args, "-out="+o.Out)
	}
	return Cmd{Args: args, JSON: true, OKCodes: []int{2}}
}
