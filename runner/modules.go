package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/reflink"
)

// modulesDir is where terraform installs modules under TF_DATA_DIR, and
// manifestName its record of them.
const (
	modulesDir   = "modules"
	manifestName = modmanifest.Name
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
// constraint, and whether any source is remote (or built from variables:
// tofu get resolves it). Units with equal keys get the same modules
// directory from one fetch. A call whose source or version is built from
// variables (modtree.Call.Dynamic) is keyed by its text and dyn(c), what
// its value depends on (see dynamicCall): it is never shared with a unit
// that gives the variables other values. dyn may be nil.
func moduleKey(tree *modtree.Tree, dyn func(modtree.Call) string) (key string, remote bool) {
	lines := make([]string, 0, len(tree.Calls))
	for _, c := range tree.Calls {
		l := c.Key + "\t" + c.Source + "\t" + c.Version
		if c.Dynamic && dyn != nil {
			l += "\t" + dyn(c)
		}
		lines = append(lines, l)
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
//
// Never older (invariant 19): units with Args.Upgrade share a fetch of
// their own (`terraform get -update`), which replaces the module store's
// set, so later plain runs of every instance of the component get the
// upgraded set. A unit without Args.Upgrade never has its modules replaced
// by a set holding an older version of a module it already has (see
// olderModules): it keeps its own, and when its set answers the same
// module calls, the store is refreshed from it (refreshStore), so the
// other instances get it too.
func (x *unitRun) modules(ctx context.Context) (string, error) {
	w := x.w
	key, remote, err := x.remoteModules()
	if err != nil || !remote {
		return "", err
	}
	upgrade := x.u.Args.Upgrade
	flightKey := key
	if upgrade {
		// Not shared with the units of this Run that did not ask to
		// upgrade, nor they with it.
		flightKey = "upgrade\n" + key
	}
	snap, leader, err := x.rs.modFlights.Do(ctx, flightKey, x.id, func() (modSnapshot, error) {
		snap, err := x.snapshotModules(ctx, key, upgrade)
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
	inst, err := installModules(snap, w.DataDir, x.tree.Calls, !upgrade)
	if err != nil {
		return "", fmt.Errorf("install modules: %w", err)
	}
	switch {
	case inst.copied:
		x.out.note("modules: copied the shared remote modules into this unit's data dir")
	case len(inst.older) > 0:
		x.out.note("modules: kept this unit's own modules: the shared set holds older versions (" + strings.Join(inst.older, ", ") + ")")
		x.refreshStore(ctx, key, snap, inst.have)
	}
	return filepath.Join(w.DataDir, modulesDir, manifestName), nil
}

// remoteModules returns the key of the unit's remote module calls (see
// moduleKey) and whether it has any; it runs nothing.
func (x *unitRun) remoteModules() (key string, remote bool, err error) {
	var early *earlyeval.Inputs
	if x.hasDynamicCalls() && earlyEvaluation(x.rs.eng) {
		root, err := x.readRootConfig()
		if err != nil {
			return "", false, fmt.Errorf("read the root module: %w", err)
		}
		early = root.early
	}
	key, remote = moduleKey(x.tree, x.dynamicCall(early))
	return key, remote, nil
}

// hasDynamicCalls reports whether a module call of the unit's tree has a
// source or version built from variables.
func (x *unitRun) hasDynamicCalls() bool {
	return slices.ContainsFunc(x.tree.Calls, func(c modtree.Call) bool { return c.Dynamic })
}

// dynamicCall returns, for moduleKey, what a call's source and version
// built from variables depend on, so that the module store is keyed by
// the evaluated source: for a call in the root module, the digest of the
// variables and locals its expressions reach, with the values this unit
// gives them (earlyeval.Inputs.ModuleDigest), and, for a source not evaluated, the
// component (a relative value names a directory of its own); for a call
// in a child module, whose
// variables come from its caller's arguments, the instance itself (its
// modules are never shared with another instance). Without early
// evaluation (early is nil) the engine reads the text as it is.
func (x *unitRun) dynamicCall(early *earlyeval.Inputs) func(modtree.Call) string {
	if early == nil {
		return nil
	}
	return func(c modtree.Call) string {
		if c.Parent != x.tree.Root {
			return "instance " + x.w.ID
		}
		k := "early " + early.ModuleDigest(c.Name)
		if modtree.DynamicExpr(c.Source) {
			// Not evaluated (see moduleSources): the engine may resolve
			// it to a directory relative to the component, so it is
			// shared only between instances of this component.
			k += " component " + x.u.Workdir.Source
		}
		return k
	}
}

// storeKey is the module store's key for a module key: modules fetched by
// one engine version are never handed to another.
func (x *unitRun) storeKey(key string) string {
	e := x.rs.eng
	return string(e.Kind) + " " + e.Version.String() + "\n" + key
}

// snapshotModules is the leader's work: the modules directory terraform
// get produces for the unit's module calls, in the Run's private dir,
// which no terraform writes. With a module store it comes from the store,
// fetched once per machine (once per engine, version and module key,
// across processes) and copied out verified (modstore's Copy: never half
// of an entry another process replaces meanwhile); with upgrade it is
// fetched afresh (get -update) and replaces the store's set first.
// Without a store it is fetched into the Run's private dir.
func (x *unitRun) snapshotModules(ctx context.Context, key string, upgrade bool) (modSnapshot, error) {
	tmp, err := os.MkdirTemp(x.rs.tmp, "modules-*")
	if err != nil {
		return modSnapshot{}, fmt.Errorf("snapshot modules: %w", err)
	}
	dst := filepath.Join(tmp, modulesDir)
	store := x.rs.modStore
	if store == nil {
		return x.fetchModules(ctx, dst, upgrade)
	}
	storeKey := x.storeKey(key)
	fill := func(ctx context.Context, dir string) error {
		snap, err := x.fetchModules(ctx, dir, upgrade)
		if err != nil {
			return err
		}
		return writeOrigin(dir, snap)
	}
	if upgrade {
		if _, _, err := store.Replace(ctx, storeKey, nil, fill); err != nil {
			return modSnapshot{}, err
		}
		x.out.note("modules: fetched afresh (upgrade); the module store's set for this component is replaced")
	}
	filled, err := store.Copy(ctx, storeKey, dst, fill)
	if err != nil {
		return modSnapshot{}, err
	}
	if !filled && !upgrade {
		x.out.note("modules: taken from the module store, fetched before")
	}
	b, err := os.ReadFile(filepath.Join(dst, originName))
	if err != nil {
		return modSnapshot{}, fmt.Errorf("module store entry for %s: %w", x.id, err)
	}
	var snap modSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return modSnapshot{}, fmt.Errorf("module store entry for %s: %w", x.id, err)
	}
	snap.Dir = dst
	return snap, nil
}

// refreshStore puts the unit's own modules into the module store in place
// of snap, the store's set, which holds an older version of one of them.
// It does so only when the unit's set answers the same module calls
// (every module key with the same source as snap's): a set installed for
// other calls is not an answer for this key. Under the store's lock, the
// set there then (another process may have refreshed it meanwhile) is
// kept unless it is older than the unit's in some module and newer in
// none. The unit's set is what terraform installed in its own data dir,
// under the instance lock, for these calls: copying it costs no download,
// and a fresh fetch could only give the newest versions the constraints
// allow, an upgrade the caller did not ask for. A failure is noted in the
// unit's log and is not the unit's failure: its own modules are in place.
func (x *unitRun) refreshStore(ctx context.Context, key string, snap modSnapshot, have []modmanifest.Record) {
	store := x.rs.modStore
	if store == nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(snap.Dir, manifestName))
	if err != nil {
		x.out.note("modules: the module store is not refreshed: " + err.Error())
		return
	}
	theirs, err := modmanifest.Parse(b)
	if err != nil || !sameModuleCalls(have, theirs) {
		x.out.note("modules: the module store is not refreshed from this unit: its modules were installed for other module calls")
		return
	}
	own := filepath.Join(x.w.DataDir, modulesDir)
	keep := func(tree string) (bool, error) {
		b, err := os.ReadFile(filepath.Join(tree, manifestName))
		if err != nil {
			return false, nil // not a set of ours: replace it
		}
		cur, err := modmanifest.Parse(b)
		if err != nil {
			return false, nil
		}
		return len(olderModules(have, cur, x.tree.Calls)) == 0 || len(olderModules(cur, have, x.tree.Calls)) > 0, nil
	}
	fill := func(ctx context.Context, dir string) error {
		if err := reflink.CopyTree(dir, own); err != nil {
			return err
		}
		return writeOrigin(dir, modSnapshot{Origin: own, Workdir: x.w.Dir})
	}
	_, replaced, err := store.Replace(ctx, x.storeKey(key), keep, fill)
	switch {
	case err != nil:
		x.out.note("modules: the module store is not refreshed: " + err.Error())
	case replaced:
		x.out.note("modules: the module store's set for this component is refreshed from this unit's newer modules")
	}
}

// writeOrigin records snap's origin in a stored snapshot dir.
func writeOrigin(dir string, snap modSnapshot) error {
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, originName), b, 0o644)
}

// originName records, in a stored snapshot, where its manifest's paths
// came from (the fetching unit's data dir and working dir), so that each
// unit's copy can be rebased onto its own.
const originName = ".tfisolate-origin.json"

// fetchModules runs terraform get (with update: get -update, which takes
// the newest versions the constraints allow over installed ones), with
// the unit's own environment (with the cache's CLI config, as its
// terraform init will have), in the unit's own workdir, and copies the
// result to dst.
func (x *unitRun) fetchModules(ctx context.Context, dst string, update bool) (modSnapshot, error) {
	w := x.w
	cliConfig := ""
	if x.rs.cfg.cache != nil {
		var err error
		if cliConfig, err = x.writeCLIConfig(x.user); err != nil {
			return modSnapshot{}, err
		}
	}
	env, err := x.engineEnv(cliConfig)
	if err != nil {
		return modSnapshot{}, err
	}
	tf := x.newTF(w.Dir, environ(env))
	get := x.u.Args.getCmd(update)
	err = x.retry(ctx, PhaseInit, func() error {
		_, err := tf.Run(ctx, get)
		return err
	})
	if err != nil {
		return modSnapshot{}, err
	}
	origin := filepath.Join(w.DataDir, modulesDir)
	if err := reflink.CopyTree(dst, origin); err != nil {
		return modSnapshot{}, fmt.Errorf("snapshot modules: %w", err)
	}
	return modSnapshot{Dir: dst, Origin: origin, Workdir: w.Dir}, nil
}

// installed is what installModules did.
type installed struct {
	copied bool                 // the snapshot was copied in
	older  []string             // the snapshot was not copied: it is older in these modules (olderModules)
	have   []modmanifest.Record // the unit's own manifest when older is set
}

// installModules gives dataDir its own copy of the snapshot, its manifest
// pointing into dataDir, unless dataDir already holds the same manifest,
// or, with neverOlder, unless the snapshot holds an older version of a
// module dataDir has (olderModules; calls are the component's module
// calls, for their version constraints): then dataDir keeps its own.
// The copy is built beside the target and renamed into place, so a crash
// leaves either the old modules, the new ones, or none (terraform init
// then fetches them itself); leftovers of such a crash are removed first.
// The caller holds the instance lock, so nothing else writes dataDir.
func installModules(snap modSnapshot, dataDir string, calls []modtree.Call, neverOlder bool) (installed, error) {
	dst := filepath.Join(dataDir, modulesDir)
	raw, err := os.ReadFile(filepath.Join(snap.Dir, manifestName))
	if err != nil {
		return installed{}, err
	}
	want, err := modmanifest.Rebase(raw, snap.Origin, snap.Workdir, dst)
	if err != nil {
		return installed{}, err
	}
	if have, err := os.ReadFile(filepath.Join(dst, manifestName)); err == nil {
		if modmanifest.Same(have, want) {
			return installed{}, nil
		}
		if neverOlder {
			// A manifest that does not parse says nothing to keep.
			haveRecs, herr := modmanifest.Parse(have)
			wantRecs, werr := modmanifest.Parse(want)
			if herr == nil && werr == nil {
				if older := olderModules(haveRecs, wantRecs, calls); len(older) > 0 {
					return installed{older: older, have: haveRecs}, nil
				}
			}
		}
	}
	copied, err := replaceModules(snap, dataDir, want)
	return installed{copied: copied}, err
}

// replaceModules puts a copy of the snapshot, with manifest want, in
// place of dataDir's modules.
func replaceModules(snap modSnapshot, dataDir string, want []byte) (bool, error) {
	dst := filepath.Join(dataDir, modulesDir)
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
	if err := reflink.CopyTree(tmp, snap.Dir); err != nil {
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

// olderModules returns the modules of have (a unit's installed set) that
// set holds in an older version, as "KEY SOURCE: HAVE, the set has SET",
// sorted. A module is compared only when both record a version (registry
// modules) under the same key and source, both versions parse, and the
// unit's version still satisfies the constraint of its call among calls
// (when the call is one of the component's own, whose constraint is
// known): a version the configuration no longer allows was not asked for,
// and replacing it is what terraform itself would do.
func olderModules(have, set []modmanifest.Record, calls []modtree.Call) []string {
	theirs := make(map[string]modmanifest.Record, len(set))
	for _, r := range set {
		theirs[r.Key] = r
	}
	constraints := map[string]string{}
	for _, c := range calls {
		constraints[c.Key] = c.Version
	}
	var out []string
	for _, h := range have {
		s, ok := theirs[h.Key]
		if !ok || h.Version == "" || s.Version == "" || s.Source != h.Source {
			continue
		}
		hv, err := version.NewVersion(h.Version)
		if err != nil {
			continue
		}
		sv, err := version.NewVersion(s.Version)
		if err != nil || !sv.LessThan(hv) {
			continue
		}
		if c := constraints[h.Key]; c != "" {
			cs, err := version.NewConstraint(c)
			if err != nil || !cs.Check(hv) {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s %s: %s, the set has %s", moduleName(h.Key), h.Source, h.Version, s.Version))
	}
	slices.Sort(out)
	return out
}

// moduleName is how a manifest key is named to a user: module.a.b.
func moduleName(key string) string {
	if key == "" {
		return "the root module"
	}
	return "module." + key
}

// sameModuleCalls reports whether two manifests record the same module
// keys with the same sources: two answers to the same module calls.
func sameModuleCalls(a, b []modmanifest.Record) bool {
	calls := func(rs []modmanifest.Record) map[string]string {
		m := make(map[string]string, len(rs))
		for _, r := range rs {
			m[r.Key] = r.Source
		}
		return m
	}
	return maps.Equal(calls(a), calls(b))
}
