package tfcmd

// ValidateOptions are validate's.
type ValidateOptions struct {
	// Vars: as InitOptions.Vars (an engine that loads module sources from
	// variables to validate).
	Vars Vars
}

// Validate builds terraform validate; an invalid configuration's
// diagnostics are in the *Error.
func Validate(o ValidateOptions) Cmd {
	return Cmd{Args: append([]string{"validate", "-no-color"}, o.Vars.Args()...)}
}
