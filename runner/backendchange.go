package runner

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/backendcfg"
	"github.com/tfisolate/tfisolate/workdir"
)

// BackendChangedError reports a unit whose backend configuration changed
// since the instance's last init while its old state may hold resources
// and neither Args.MigrateState nor Args.Reconfigure says what to do:
// reconfiguring would point the unit at another (often empty) state, and
// Apply would create everything again. It wraps ErrBackendChanged.
type BackendChangedError struct {
	Unit string
	// Old and New describe the backends: type and the settings that say
	// where the state is (bucket, key, path, ...), never credentials.
	Old, New string
}

func (e *BackendChangedError) Error() string {
	return fmt.Sprintf("the backend changed since the last init (was %s, now %s) and the old state may hold resources; "+
		"nothing ran. Set Args.MigrateState to move the state to the new backend, or Args.Reconfigure to use the new backend "+
		"as it is and leave the old state where it is", e.Old, e.New)
}

// Is makes errors.Is(err, ErrBackendChanged) true.
func (e *BackendChangedError) Is(target error) bool { return target == ErrBackendChanged }

// checkBackendChange decides whether a changed backend may be taken
// without the caller's word: only when the old state provably holds no
// resources, which the runner can tell for a local state alone.
func (x *unitRun) checkBackendChange(root *rootConfig) error {
	old := backendcfg.Recorded(x.w.DataDir)
	if old.Local() && !workdir.MayHoldResources(old.LocalStatePath(x.dir, currentWorkspace(x.w.DataDir))) {
		return nil
	}
	return &BackendChangedError{Unit: x.id, Old: old.String(), New: backendcfg.Configured(root.files).String()}
}
