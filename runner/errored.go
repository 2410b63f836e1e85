package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// erroredStateDir, in an instance's data dir, keeps the states terraform
// applied but could not save to the backend, until they are pushed. The
// data dir is instance data: no refresh of the workdir touches it.
const erroredStateDir = "tfisolate-errored-state"

// erroredStateName is the file terraform (and tofu) writes into its
// working directory when it cannot save the state after an apply.
const erroredStateName = "errored.tfstate"

// StateNotSavedError reports an instance whose terraform changed
// infrastructure and then could not save the state to its backend (a
// connection cut, a 503 from the state server). What terraform applied is
// only in File: applying again would plan against the backend's older
// state and create everything a second time, so every command that reads
// or changes the instance's state is refused until File is pushed, with
// the PushErroredState command or by hand (Error says how). It wraps
// ErrStateNotSaved.
type StateNotSavedError struct {
	// File is the state terraform could not save, kept in the instance's
	// data dir (mode 0600: it holds secrets as terraform renders them).
	File string
	// Dir and DataDir are where terraform runs for the instance and its
	// TF_DATA_DIR: the by-hand push runs there.
	Dir, DataDir string
	// Engine is the executable's name ("terraform" or "tofu").
	Engine string
	// Earlier is set when File was left by an earlier Run: this Run
	// refused the command without starting terraform.
	Earlier bool
}

func (e *StateNotSavedError) Error() string {
	what := "terraform changed infrastructure but could not save the state"
	if e.Earlier {
		what = "an earlier apply of this instance changed infrastructure but could not save the state"
	}
	return fmt.Sprintf("%s; the state it holds is kept in %s. Until it is pushed, commands that read or change "+
		"this instance's state are refused (they would work from a state that lacks what that apply did). "+
		"Push it with the PushErroredState command for this unit, or by hand: cd %q && TF_DATA_DIR=%q %s state push %q && rm %q",
		what, e.File, e.Dir, e.DataDir, e.Engine, e.File, e.File)
}

// Is makes errors.Is(err, ErrStateNotSaved) true.
func (e *StateNotSavedError) Is(target error) bool { return target == ErrStateNotSaved }

// pendingErroredStates lists the states kept in dataDir that are still to
// be pushed, oldest first (their names sort by time).
func pendingErroredStates(dataDir string) []string {
	files, _ := filepath.Glob(filepath.Join(dataDir, erroredStateDir, "*.tfstate"))
	slices.Sort(files)
	return files
}

// keepErroredState moves the errored.tfstate a failed apply-like command
// left in the unit's directory into the instance's data dir and returns
// the unit's error: a *StateNotSavedError joined with terraform's own,
// or cmdErr as it was when terraform left no such file.
func (x *unitRun) keepErroredState(cmdErr error) error {
	src := filepath.Join(x.dir, erroredStateName)
	if _, err := os.Lstat(src); err != nil {
		return cmdErr
	}
	dir := filepath.Join(x.w.DataDir, erroredStateDir)
	dst := filepath.Join(dir, "errored-"+time.Now().UTC().Format("20060102T150405.000000000Z")+".tfstate")
	if err := atomicfile.MkdirPrivate(dir); err != nil {
		return errors.Join(cmdErr, fmt.Errorf("keep %s: %w", src, err))
	}
	if err := os.Chmod(src, 0o600); err != nil {
		return errors.Join(cmdErr, fmt.Errorf("keep %s: %w", src, err))
	}
	if err := os.Rename(src, dst); err != nil {
		return errors.Join(cmdErr, fmt.Errorf("keep %s: %w", src, err))
	}
	se := x.stateNotSaved(dst, false)
	x.out.note(se.Error())
	return fmt.Errorf("%w\n%w", se, cmdErr)
}

func (x *unitRun) stateNotSaved(file string, earlier bool) *StateNotSavedError {
	return &StateNotSavedError{File: file, Dir: x.dir, DataDir: x.w.DataDir, Engine: filepath.Base(x.rs.eng.Path), Earlier: earlier}
}

// refuseUnsavedState fails a command that reads or changes the
// instance's state while a state terraform could not save is pending.
func (x *unitRun) refuseUnsavedState() error {
	switch x.rs.cmd.kind {
	case kindInit, kindValidate, kindStep, kindForceUnlock, kindPushErroredState:
		return nil
	}
	if files := pendingErroredStates(x.w.DataDir); len(files) > 0 {
		return x.stateNotSaved(files[0], true)
	}
	return nil
}

// pushErroredStates pushes every pending state, oldest first, with
// terraform state push (which refuses a state of another lineage or an
// older serial than the backend's), removing each once pushed.
func (x *unitRun) pushErroredStates(ctx context.Context) error {
	files := pendingErroredStates(x.w.DataDir)
	if len(files) == 0 {
		x.out.note("no state to push: every apply of this instance saved its state")
		return nil
	}
	for _, f := range files {
		_, err := x.run(ctx, PhaseStep, "state push", func(lt string) tfcmd.Cmd { return tfcmd.StatePush(tfcmd.StatePushOptions{LockTimeout: lt, File: f}) })
		if err != nil {
			return fmt.Errorf("push %s: %w", f, err)
		}
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("pushed %s, but cannot remove it: %w", f, err)
		}
		x.out.note("pushed the state an earlier apply could not save: " + f)
	}
	return nil
}
