package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/modinstall"
	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modserve"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/reflink"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// modulesDir is where terraform installs modules under TF_DATA_DIR, and
// manifestName its record of them.
const (
	modulesDir   = modinstall.Dir
	manifestName = modmanifest.Name
)

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
// modinstall.Older): it keeps its own, and when its set answers the same
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
	snap, leader, err := x.rs.modFlights.Do(ctx, flightKey, x.id, func() (modinstall.Snapshot, error) {
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
	inst, err := modinstall.Install(snap, w.DataDir, x.tree.Calls, !upgrade)
	if err != nil {
		return "", fmt.Errorf("install modules: %w", err)
	}
	switch {
	case inst.Copied:
		x.out.note("modules: copied the shared remote modules into this unit's data dir")
	case len(inst.Older) > 0:
		x.out.note("modules: kept this unit's own modules: the shared set holds older versions (" + strings.Join(inst.Older, ", ") + ")")
		x.refreshStore(ctx, key, snap, inst.Have)
	}
	return filepath.Join(w.DataDir, modulesDir, manifestName), nil
}

// remoteModules returns the key of the unit's remote module calls (see
// modinstall.Key) and whether it has any; it runs nothing.
func (x *unitRun) remoteModules() (key string, remote bool, err error) {
	var early *earlyeval.Inputs
	if x.hasDynamicCalls() && earlyEvaluation(x.rs.eng) {
		root, err := x.readRootConfig()
		if err != nil {
			return "", false, fmt.Errorf("read the root module: %w", err)
		}
		early = root.early
	}
	key, remote = modinstall.Key(x.tree, x.dynamicCall(early))
	return key, remote, nil
}

// hasDynamicCalls reports whether a module call of the unit's tree has a
// source or version built from variables.
func (x *unitRun) hasDynamicCalls() bool {
	return slices.ContainsFunc(x.tree.Calls, func(c modtree.Call) bool { return c.Dynamic })
}

// dynamicCall returns, for modinstall.Key, what a call's source and version
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
func (x *unitRun) snapshotModules(ctx context.Context, key string, upgrade bool) (modinstall.Snapshot, error) {
	tmp, err := os.MkdirTemp(x.rs.tmp, "modules-*")
	if err != nil {
		return modinstall.Snapshot{}, fmt.Errorf("snapshot modules: %w", err)
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
		return modinstall.WriteOrigin(dir, snap)
	}
	if upgrade {
		if _, _, err := store.Replace(ctx, storeKey, nil, fill); err != nil {
			return modinstall.Snapshot{}, err
		}
		x.out.note("modules: fetched afresh (upgrade); the module store's set for this component is replaced")
	}
	filled, err := store.Copy(ctx, storeKey, dst, fill)
	if err != nil {
		return modinstall.Snapshot{}, err
	}
	if !filled && !upgrade {
		x.out.note("modules: taken from the module store, fetched before")
	}
	snap, err := modinstall.ReadOrigin(dst)
	if err != nil {
		return modinstall.Snapshot{}, fmt.Errorf("module store entry for %s: %w", x.id, err)
	}
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
func (x *unitRun) refreshStore(ctx context.Context, key string, snap modinstall.Snapshot, have []modmanifest.Record) {
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
	if err != nil || !modinstall.SameCalls(have, theirs) {
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
		return len(modinstall.Older(have, cur, x.tree.Calls)) == 0 || len(modinstall.Older(cur, have, x.tree.Calls)) > 0, nil
	}
	fill := func(ctx context.Context, dir string) error {
		if err := reflink.CopyTree(dir, own); err != nil {
			return err
		}
		return modinstall.WriteOrigin(dir, modinstall.Snapshot{Origin: own, Workdir: x.w.Dir})
	}
	_, replaced, err := store.Replace(ctx, x.storeKey(key), keep, fill)
	switch {
	case err != nil:
		x.out.note("modules: the module store is not refreshed: " + err.Error())
	case replaced:
		x.out.note("modules: the module store's set for this component is refreshed from this unit's newer modules")
	}
}

// fetchModules runs terraform get (with update: get -update, which takes
// the newest versions the constraints allow over installed ones), with
// the unit's own environment (with the cache's CLI config, as its
// terraform init will have), in the unit's own workdir, and copies the
// result to dst. With a module server (WithModuleServer) and registry
// or git::https modules to fetch, get runs through the server first; when that fails,
// it runs as without the server, and the fallback is reported.
func (x *unitRun) fetchModules(ctx context.Context, dst string, update bool) (modinstall.Snapshot, error) {
	w := x.w
	cliConfig := ""
	if x.rs.cfg.cache != nil {
		var err error
		if cliConfig, err = x.writeCLIConfig(x.user); err != nil {
			return modinstall.Snapshot{}, err
		}
	}
	get := x.u.Args.getCmd(update)
	var fb *ModuleFallback
	if srv := x.rs.cfg.moduleServer; srv != "" {
		hosts, gits := registryHosts(x.tree.Calls, x.rs.eng.RegistryHost()), gitHosts(x.tree.Calls)
		if len(hosts) > 0 || len(gits) > 0 {
			err := x.getThroughServer(ctx, get, srv, hosts, gits)
			if err == nil {
				x.out.note("modules: fetched through the module server " + srv)
				return x.snapshotFetched(dst)
			}
			if ctx.Err() != nil {
				return modinstall.Snapshot{}, err
			}
			fb = &ModuleFallback{Server: srv, Err: firstLines(err.Error(), 3), Used: "the modules' own sources"}
		}
	}
	env, err := x.engineEnv(cliConfig)
	if err != nil {
		return modinstall.Snapshot{}, err
	}
	tf := x.newTF(w.Dir, environ(env))
	err = x.retry(ctx, PhaseInit, func() error {
		_, err := tf.Run(ctx, get)
		return err
	})
	if err != nil {
		if fb != nil {
			return modinstall.Snapshot{}, fmt.Errorf("the module server failed (%s), and so did %w", fb.Err, err)
		}
		return modinstall.Snapshot{}, err
	}
	if fb != nil {
		x.moduleFellBack(*fb)
	}
	return x.snapshotFetched(dst)
}

// snapshotFetched copies what get installed in the unit's data dir to
// dst.
func (x *unitRun) snapshotFetched(dst string) (modinstall.Snapshot, error) {
	origin := filepath.Join(x.w.DataDir, modulesDir)
	if err := reflink.CopyTree(dst, origin); err != nil {
		return modinstall.Snapshot{}, fmt.Errorf("snapshot modules: %w", err)
	}
	return modinstall.Snapshot{Dir: dst, Origin: origin, Workdir: x.w.Dir}, nil
}

// getThroughServer runs get once (a server that fails is fallen back
// from, not retried) with the unit's CLI config sending hosts' module
// requests to the server (serverCLIConfig), and the server's token
// (TF_TOKEN_<server host>) as their credentials, in the CLI config and
// as their TF_TOKEN_ variables alike; and with git sending fetches from
// gits (the hosts of its git::https sources) to the server, the token
// as a header to the server only (modserve's GitConfig, after any
// GIT_CONFIG_COUNT entries the unit's environment has).
func (x *unitRun) getThroughServer(ctx context.Context, get tfcmd.Cmd, server string, hosts, gits []string) error {
	u, _ := url.Parse(server) // checked by WithModuleServer
	token, _ := x.lookupEnv(tokenVar(u.Host))
	f := serverCLIConfig(x.user, server, token, hosts)
	var data []byte
	if c := x.rs.cfg.cache; c != nil {
		data = c.CLIConfigFor(f)
	} else {
		var err error
		if data, err = getCLIConfig(f); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(data)
	p := filepath.Join(x.rs.tmp, "cli-modserver-"+hex.EncodeToString(sum[:8])+".tfrc.json")
	if !exists(p) {
		// 0600 in the Run's private dir: it holds the server's token.
		if err := atomicfile.WriteFile(p, data, 0o600); err != nil {
			return fmt.Errorf("write CLI config: %w", err)
		}
	}
	env, err := x.engineEnv(p)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		delete(env, tokenVar(h))
		if token != "" {
			env[tokenVar(h)] = token
		}
	}
	if len(gits) > 0 {
		c, err := modserve.NewClient(server)
		if err != nil {
			return err
		}
		first, _ := strconv.Atoi(env["GIT_CONFIG_COUNT"])
		maps.Copy(env, c.GitConfig(gits, token, max(first, 0)))
	}
	// Bounded of its own (a server that accepts and never answers would
	// hold terraform's download): past the server's own fill bound, it
	// is taken for down.
	ctx, cancel := context.WithTimeout(ctx, modserve.DefaultClientTimeout)
	defer cancel()
	_, err = x.newTF(x.w.Dir, environ(env)).Run(ctx, get)
	return err
}

// moduleFellBack reports modules fetched from their own sources because
// the module server failed: in the unit's log and output, an event, and
// once per Run in the logger and Report.Warnings.
func (x *unitRun) moduleFellBack(fb ModuleFallback) {
	msg := "modules: " + fb.String()
	x.out.note(msg)
	x.rs.em.emit(Event{Unit: x.id, Phase: PhaseModuleFallback, Status: Running, ModuleFallback: &fb})
	x.rs.warnMu.Lock()
	key := "module server " + fb.Server
	first := !x.rs.fallbacks[key]
	if first {
		if x.rs.fallbacks == nil {
			x.rs.fallbacks = map[string]bool{}
		}
		x.rs.fallbacks[key] = true
		x.rs.warnings = append(x.rs.warnings, msg)
	}
	x.rs.warnMu.Unlock()
	if first {
		x.rs.cfg.logger.Warn("module server failed; modules fetched from their own sources", "unit", x.id,
			"server", fb.Server, "err", fb.Err, "used", fb.Used)
	}
}

// firstLines is at most n non-empty lines of s, joined by "; ".
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
