package tfcmd

// Cmd is one terraform command ready to run: its arguments and how its
// output is read. The functions of this package build them; Raw takes
// arguments as given.
type Cmd struct {
	// Args is the full argument list, the subcommand first.
	Args []string
	// JSON reads stdout as terraform's machine-readable UI (-json): each
	// message's text goes to the log, outputs and the change summary are
	// kept in the Result, error diagnostics form the error.
	JSON bool
	// Capture keeps stdout in Result.Stdout instead of logging it (show
	// -json, output -json: they print sensitive values in clear).
	Capture bool
	// OKCodes are exit codes other than 0 that mean success (plan's
	// -detailed-exitcode 2: there are changes).
	OKCodes []int
	// LogFailure, when set, decides whether what terraform said on
	// stderr (and in error diagnostics) about a failure goes to the log:
	// a state-lock attempt's is left out by a caller that writes one line
	// per wait of its own. Unset: always.
	LogFailure func(err error) bool
}

// Name is the subcommand, as errors and logs name the command.
func (c Cmd) Name() string {
	if len(c.Args) == 0 {
		return ""
	}
	return c.Args[0]
}

// Raw is a command given as a whole argument list (the subcommand first)
// whose stdout is captured, never logged: a custom step's subcommand
// (state list, state show) may print secrets.
func Raw(args ...string) Cmd { return Cmd{Args: args, Capture: true} }
