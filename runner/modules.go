package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// modulesDir is where terraform installs modules under TF_DATA_DIR, and
// manifestName its record of them.
const (
	modulesDir   = "modules"
	manifestName = "modules.json"
)

// modSnapshot is a leader's fetched modules directory, copied out of its
// data dir into the run's private directory, which no terraform writes.
type modSnapshot struct {
	Dir     string `json:"-"`       // the copy: manifest and module dirs
	Origin  string `json:"origin"`  // the leader's DATADIR/modules the manifest's Dirs point into
	Workdir string `json:"workdir"` // the leader's working dir, against which relative Dirs resolve
}

// moduleKey returns what decides the result of `terraform get` for a
// module tree: every module call's key path, source and version
// constraint, and whether any source is remote. Units with equal keys get
// the same modules directory from one fetch.
func moduleKey(tree *modtree.Tree) (key string, remote bool) {
	lines := make([]string, 0, len(tree.Calls))
	for _, c := range tree.Calls {
		lines = append(lines, c.Key+"\t"+c.Source+"\t"+c.Version)
		remote = remote || !c.Local
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), remote
}

// modules makes sure the unit's data dir holds the remote modules its
// component calls, fetched once per module key per Run: the leader runs
// `terraform get` in its own workdir and snapshots the result; every unit
// (the leader too) then gets its own copy, unless its data dir already
// has the same manifest. It returns the manifest path when the component
// calls remote modules, "" otherwise.
func (x *unitRun) modules(ctx context.Context) (string, error) {
	w := x.w
	key, remote := moduleKey(x.tree)
	if !remote {
		return "", nil
	}
	snap, leader, err := x.rs.modFlights.Do(ctx, key, x.id, func() (modSnapshot, error) {
		snap, err := x.snapshotModules(ctx, key)
		if err != nil {
			return snap, fmt.Errorf("%w: %w", ErrModules, err)
		}
		return snap, nil
	})
	if err != nil {
		return "", err
	}
	if leader {
		x.out.note("modules: fetched remote modules for every unit of this component")
	}
	copied, err := installModules(snap, w.DataDir)
	if err != nil {
		return "", fmt.Errorf("install modules: %w", err)
	}
	if copied {
		x.out.note("modules: copied the shared remote modules into this unit's data dir")
	}
	return filepath.Join(w.DataDir, modulesDir, manifestName), nil
}

// snapshotModules is the leader's work: the modules directory terraform
// get produces for the unit's module calls. With a module store it comes
// from the store, fetched once per machine (once per engine, version and
// module key, across processes); without one, or with Args.Upgrade
// (which must fetch afresh), it is fetched into the Run's private dir.
func (x *unitRun) snapshotModules(ctx context.Context, key string) (modSnapshot, error) {
	store := x.rs.modStore
	if store == nil || x.u.Args.Upgrade {
		tmp, err := os.MkdirTemp(x.rs.tmp, "modules-*")
		if err != nil {
			return modSnapshot{}, fmt.Errorf("snapshot modules: %w", err)
		}
		return x.fetchModules(ctx, filepath.Join(tmp, modulesDir))
	}
	e := x.rs.eng
	storeKey := string(e.Kind) + " " + e.Version.String() + "\n" + key
	dir, filled, err := store.Get(ctx, storeKey, func(ctx context.Context, dst string) error {
		snap, err := x.fetchModules(ctx, dst)
		if err != nil {
			return err
		}
		b, err := json.Marshal(snap)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, originName), b, 0o644)
	})
	if err != nil {
		return modSnapshot{}, err
	}
	if !filled {
		x.out.note("modules: taken from the module store, fetched before")
	}
	b, err := os.ReadFile(filepath.Join(dir, originName))
	if err != nil {
		return modSnapshot{}, fmt.Errorf("module store entry %s: %w", dir, err)
	}
	var snap modSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return modSnapshot{}, fmt.Errorf("module store entry %s: %w", dir, err)
	}
	snap.Dir = dir
	return snap, nil
}

// originName records, in a stored snapshot, where its manifest's paths
// came from (the fetching unit's data dir and working dir), so that each
// unit's copy can be rebased onto its own.
const originName = ".tfisolate-origin.json"

// fetchModules runs terraform get, with the unit's own environment (with
// the cache's CLI config, as its terraform init will have), in the unit's
// own workdir, and copies the result to dst.
func (x *unitRun) fetchModules(ctx context.Context, dst string) (modSnapshot, error) {
	w := x.w
	cliConfig := ""
	if x.rs.cfg.cache != nil {
		var err error
		if cliConfig, err = x.writeCLIConfig(x.user); err != nil {
			return modSnapshot{}, err
		}
	}
	tf := &tfProcess{path: x.rs.eng.Path, dir: w.Dir, env: environ(unitEnv(processEnv(), w.Env(), cliConfig, x.u.Env)),
		grace: x.rs.cfg.grace, kill: x.rs.kill, out: x.out}
	err := x.retry(ctx, PhaseInit, func() error {
		_, err := tf.run(ctx, []string{"get", "-no-color"}, runOpts{})
		return err
	})
	if err != nil {
		return modSnapshot{}, err
	}
	origin := filepath.Join(w.DataDir, modulesDir)
	if err := copyTree(dst, origin); err != nil {
		return modSnapshot{}, fmt.Errorf("snapshot modules: %w", err)
	}
	return modSnapshot{Dir: dst, Origin: origin, Workdir: w.Dir}, nil
}

// installModules gives dataDir its own copy of the snapshot, its manifest
// pointing into dataDir, unless dataDir already holds the same manifest.
// The copy is built beside the target and renamed into place, so a crash
// leaves either the old modules, the new ones, or none (terraform init
// then fetches them itself); leftovers of such a crash are removed first.
// The caller holds the instance lock, so nothing else writes dataDir.
func installModules(snap modSnapshot, dataDir string) (bool, error) {
	dst := filepath.Join(dataDir, modulesDir)
	raw, err := os.ReadFile(filepath.Join(snap.Dir, manifestName))
	if err != nil {
		return false, err
	}
	want, err := rebaseManifest(raw, snap.Origin, snap.Workdir, dst)
	if err != nil {
		return false, err
	}
	if have, err := os.ReadFile(filepath.Join(dst, manifestName)); err == nil && sameManifest(have, want) {
		return false, nil
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return false, err
	}
	leftovers, _ := filepath.Glob(filepath.Join(dataDir, ".modules-*"))
	for _, l := range leftovers {
		if err := os.RemoveAll(l); err != nil {
			return false, err
		}
	}
	tmp, err := os.MkdirTemp(dataDir, ".modules-new-*")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp) // gone by rename on success
	if err := copyTree(tmp, snap.Dir); err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(tmp, originName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	mf := filepath.Join(tmp, manifestName)
	if err := os.Remove(mf); err != nil {
		return false, err
	}
	if err := os.WriteFile(mf, want, 0o644); err != nil {
		return false, err
	}
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		old = filepath.Join(dataDir, ".modules-old-"+filepath.Base(tmp))
		if err := os.Rename(dst, old); err != nil {
			return false, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return false, err
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return false, err
		}
	}
	return true, nil
}
