package tfcmd

// GetOptions shape terraform get.
type GetOptions struct {
	// Update fetches the newest versions the constraints allow (-update).
	Update bool
	// Vars: as InitOptions.Vars (early evaluation only).
	Vars Vars
}

// Get builds terraform get: it fetches the module calls' modules.
func Get(o GetOptions) Cmd {
	args := []string{"get", "-no-color"}
	if o.Update {
		args = append(args, "-update")
	}
	return Cmd{Args: append(args, o.Vars.Args()...)}
}
