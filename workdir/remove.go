package workdir

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Remove deletes an instance's workdir under its lock (waiting under ctx).
// Unless force is set it refuses, with an error wrapping ErrHasState and
// naming the files, when any state-like file in the workdir (see the
// package doc; backups and the local backend's path and workspace_dir
// included) still records resources: deleting it would orphan real
// infrastructure. The lock file itself is kept, because
// another process may be waiting on it. Removing an instance that has no
// workdir is not an error. Remove releases the instance's adoptions (see
// Spec.AdoptState): a state it adopted may then be adopted by another
// instance.
//
// Remove waits for the instance lock, so calling it while holding an open
// Workdir of the same instance blocks until ctx ends.
func (m *Manager) Remove(ctx context.Context, stack, instance string, force bool) error {
	id, err := ID(stack, instance)
	if err != nil {
		return fmt.Errorf("remove workdir: %w", err)
	}
	lk, err := m.lock(ctx, stack, instance, id)
	if err != nil {
		return fmt.Errorf("remove workdir %s: %w", id, err)
	}
	err = m.remove(id, force)
	if err == nil {
		// The state the instance adopted went with its workdir: another
		// instance may adopt it now. Also when the home was gone
		// already, so a Remove killed between the two finishes here.
		err = m.releaseAdoptions(ctx, id)
	}
	if rerr := lk.release(); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("remove workdir %s: %w", id, err)
	}
	return nil
}

func (m *Manager) remove(id string, force bool) error {
	home := filepath.Join(m.root, id)
	if _, err := os.Stat(home); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if !force {
		found, err := findState(home)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			return fmt.Errorf("%w: %s records resources (remove with force to delete anyway)", ErrHasState, strings.Join(found, ", "))
		}
	}
	// Rename first so the home disappears at once; a kill during the slow
	// delete leaves only scratch, which the next Prepare sweeps.
	scratch := filepath.Join(m.root, tmpDir, id)
	if err := atomicfile.MkdirPrivate(scratch); err != nil {
		return err
	}
	trash, err := os.MkdirTemp(scratch, "remove-")
	if err != nil {
		return err
	}
	if err := os.Rename(home, filepath.Join(trash, "home")); err != nil {
		return err
	}
	return os.RemoveAll(scratch)
}

// findState returns every state-like file in the instance's workdir (see
// walkState) that records at least one resource, or cannot be parsed,
// which is treated the same way, to err on the side of keeping it. A
// backup counts as much as the state itself: an emptied
// terraform.tfstate beside a backup that records resources still means
// infrastructure may exist. A state the SDK cannot read (an OpenTofu
// encrypted state, a cut-off file) counts as recording resources.
func findState(home string) ([]string, error) { return walkState(home, hasResources) }

// walkState returns every state-like regular file in the instance's
// workdir for which keep is true. State-like are files named like state
// anywhere (terraform.tfstate*, *.tfstate and their backups, workspace
// state under terraform.tfstate.d), and the state at the component's
// local backend path and under its workspace_dir, read from the
// configuration in the workdir (generated files included). A state file
// copied from the source because the configuration reads it (a local
// terraform_remote_state) is the source's, not the instance's, as long
// as the copy is untouched.
func walkState(home string, keep func(p string) bool) ([]string, error) {
	src := filepath.Join(home, srcDir)
	comp := "."
	if err := stampNewer(home); err != nil {
		return nil, err
	}
	st := readStamp(home)
	if st != nil && st.Component != "" {
		comp = st.Component
	}
	configured, _ := modtree.ReadBackend(filepath.Join(src, filepath.FromSlash(comp)), nil, stampFiles(st))
	bs := stateBackends(configured, instanceDataDir(home))
	owned := statePathsOf(comp, bs...)
	stateNames := map[string]bool{}
	for _, b := range bs {
		if b.Local() {
			n := path.Base(filepath.ToSlash(b.StatePath()))
			stateNames[n], stateNames[n+".backup"] = true, true
		}
	}
	var found []string
	err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if de.IsDir() {
			if de.Name() == ".terraform" && p != src {
				return filepath.SkipDir // terraform's own data: modules, the backend cache
			}
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := de.Name()
		isState := (stateLike(name) || owned.files[rel] ||
			owned.has(rel) && stateNames[name]) &&
			!strings.HasSuffix(name, ".lock.info") // the local backend's lock, not state
		if isState && st != nil && st.Inputs[rel] != "" && fileSHA(p) == st.Inputs[rel] {
			return nil // an untouched copy of a state the configuration reads: the source's
		}
		if isState && de.Type().IsRegular() && keep(p) {
			found = append(found, p)
		}
		return nil
	})
	return found, err
}

// fileSHA is the lowercase hex SHA-256 of the regular file p, "" when it
// cannot be read.
func fileSHA(p string) string {
	sum, _, err := fileSum(context.Background(), p, make([]byte, 32<<10))
	if err != nil {
		return ""
	}
	return hex.EncodeToString(sum[:])
}

// hasResources reports whether the state file at p must be kept: it
// records resources, or the SDK cannot tell (an OpenTofu encrypted
// state, a cut-off or unreadable file).
func hasResources(p string) bool { return readState(p).mayHoldResources() }
