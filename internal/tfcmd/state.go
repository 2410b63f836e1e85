package tfcmd

// StatePushOptions shape terraform state push.
type StatePushOptions struct {
	LockTimeout string
	// File is the state file pushed to the backend.
	File string
}

// StatePush builds terraform state push. terraform refuses a state of
// another lineage or an older serial than the backend's.
func StatePush(o StatePushOptions) Cmd {
	return Cmd{Args: []string{"state", "push", "-lock-timeout=" + o.LockTimeout, o.File}}
}
