package tfcmd

// DestroyOptions shape terraform destroy; it takes no -replace.
type DestroyOptions struct {
	Change
}

// Destroy builds terraform destroy -auto-approve with the
// machine-readable UI.
func Destroy(o DestroyOptions) Cmd {
	args := append([]string{"destroy", "-auto-approve", "-json"}, o.Change.args()...)
	return Cmd{Args: args, JSON: true}
}
