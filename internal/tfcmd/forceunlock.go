package tfcmd

// ForceUnlock builds terraform force-unlock of the state lock id. "--"
// goes before the ID for the reason WorkspaceSelect gives.
func ForceUnlock(id string) Cmd {
	return Cmd{Args: []string{"force-unlock", "-force", "-no-color", "--", id}}
}
