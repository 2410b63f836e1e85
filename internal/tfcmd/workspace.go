package tfcmd

// WorkspaceSelectOptions shape terraform workspace select.
type WorkspaceSelectOptions struct {
	// Name is the workspace, created when missing.
	Name string
	// Vars: as InitOptions.Vars (early evaluation only).
	Vars Vars
}

// WorkspaceSelect builds terraform workspace select -or-create. "--"
// goes before the name: without it terraform and tofu read a name such
// as "-h" as a flag (print help, exit 0) and the unit would run in
// another workspace.
func WorkspaceSelect(o WorkspaceSelectOptions) Cmd {
	args := append([]string{"workspace", "select", "-or-create=true"}, o.Vars.Args()...)
	return Cmd{Args: append(args, "--", o.Name)}
}
