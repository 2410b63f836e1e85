//go:build !unix

package otheruser

import "os/exec"

// setCredential does nothing: NeedRoot has skipped the test already (no
// Unix user ids here).
func setCredential(*exec.Cmd, uint32) {}
