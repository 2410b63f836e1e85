package tfcmd

// InitOptions shape terraform init.
type InitOptions struct {
	// BackendConfig are -backend-config values or files, in order.
	BackendConfig []string
	// BackendChanged says the backend configuration changed since the
	// last successful init: init then reconfigures (-reconfigure), or
	// migrates the state with MigrateState.
	BackendChanged bool
	// MigrateState migrates the state to a changed backend
	// (-migrate-state -force-copy); it adds nothing when the backend did
	// not change.
	MigrateState bool
	// Reconfigure passes -reconfigure whether or not the backend changed.
	Reconfigure bool
	// Upgrade passes -upgrade.
	Upgrade bool
	// Vars are given only to an engine that evaluates variables at init
	// (OpenTofu's early evaluation: a backend or module source built from
	// them); leave it empty otherwise.
	Vars Vars
}

// Init builds terraform init: never interactive, no colour.
func Init(o InitOptions) Cmd {
	args := []string{"init", "-input=false", "-no-color"}
	for _, bc := range o.BackendConfig {
		args = append(args, "-backend-config="+bc)
	}
	switch {
	case o.MigrateState && o.BackendChanged:
		args = append(args, "-migrate-state", "-force-copy")
	case o.Reconfigure || o.BackendChanged:
		args = append(args, "-reconfigure")
	}
	if o.Upgrade {
		args = append(args, "-upgrade")
	}
	return Cmd{Args: append(args, o.Vars.Args()...)}
}
