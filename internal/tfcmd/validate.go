package tfcmd

// Validate builds terraform validate; an invalid configuration's
// diagnostics are in the *Error.
func Validate() Cmd { return Cmd{Args: []string{"validate", "-no-color"}} }
