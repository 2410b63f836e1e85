package workdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// CheckState makes sure the instance's local state can be taken at its
// word before terraform runs against it; call it under the instance lock
// (between Prepare and Close), before every command. workspace is the
// workspace the command will use; "" means the one selected in the data
// dir (default when none is).
//
// The state files checked are where the local backend keeps that
// workspace's state: its path (terraform.tfstate by default) for the
// default workspace, else workspace_dir/NAME/terraform.tfstate
// (terraform.tfstate.d by default); for the backend the configuration in
// w.Dir declares (generated files included), and for the one the engine
// recorded at its last init when that differs (a path given with
// -backend-config, or built by OpenTofu's early evaluation from a
// variable, is known only there).
// It returns a *DamagedStateError (wrapping ErrStateDamaged) when such a
// file is
//
//   - not a complete state document (cut off mid-write, or not a state at
//     all; an OpenTofu encrypted state is complete), or
//   - empty (0 bytes, or only whitespace: what the local backend leaves
//     when it is killed between truncating the file and writing it) while
//     a backup beside it, or the workdir's record of the last complete
//     state it saw there, shows the instance had a state.
//
// The error names the file, the backup and the steps to recover; the
// backup is never restored automatically, because it lacks whatever the
// interrupted run created. A missing file, and an empty one with neither
// backup nor record (an instance whose first run was killed before it
// wrote anything), pass. When the file is complete, CheckState records
// its lineage and serial in the workdir's metadata, so a later emptied
// file is refused even where no backup was written. A backend that keeps
// no local state passes.
func (w *Workdir) CheckState(workspace string) error {
	configured, _ := modtree.ReadBackend(w.Dir, nil, w.rule) // unreadable: terraform reports it; local defaults apply
	if workspace == "" {
		workspace = selectedWorkspace(w.DataDir)
	}
	for _, b := range stateBackends(configured, w.DataDir) {
		if !b.Local() {
			continue
		}
		place := filepath.ToSlash(b.StatePath())
		if workspace != "default" {
			place = filepath.ToSlash(filepath.Join(b.StateWorkspaceDir(), workspace, "terraform.tfstate"))
		}
		if err := w.checkStateAt(place); err != nil {
			return err
		}
	}
	return nil
}

// checkStateAt is CheckState for the state place (see statePlaces).
func (w *Workdir) checkStateAt(place string) error {
	file := placeIn(w.Dir, place)
	st := readState(file)
	rec := readStateRecord(w.Home)
	switch {
	case !st.exists:
		return nil
	case st.complete:
		if seen, ok := rec.Seen[place]; ok && seen.Lineage == st.lineage && seen.Serial == st.serial {
			return nil
		}
		if rec.Seen == nil {
			rec.Seen = map[string]seenState{}
		}
		rec.Seen[place] = seenState{Lineage: st.lineage, Serial: st.serial}
		if err := writeStateRecord(w.Home, rec); err != nil {
			return fmt.Errorf("check state %s: %w", file, err)
		}
		return nil
	}
	derr := &DamagedStateError{File: file, Empty: st.empty()}
	if bk := readState(file + ".backup"); bk.exists && !bk.empty() {
		derr.Backup = file + ".backup"
	}
	seen, hadRecord := rec.Seen[place]
	if hadRecord {
		derr.Lineage, derr.Serial = seen.Lineage, seen.Serial
		if derr.Lineage == "" {
			derr.Lineage = "unknown"
		}
	}
	if st.empty() && derr.Backup == "" && !hadRecord {
		return nil // never had a state: terraform starts a new one, as plain terraform would
	}
	return derr
}

// selectedWorkspace is the workspace terraform has selected in dataDir
// (its "environment" file), "default" when none is.
func selectedWorkspace(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "environment"))
	if err != nil {
		return "default"
	}
	if ws := strings.TrimSpace(string(b)); ws != "" {
		return ws
	}
	return "default"
}
