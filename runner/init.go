package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/backendcfg"
	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/fingerprint"
	"github.com/tfisolate/tfisolate/internal/modinstall"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/pluginc"
)

// initRecordName is the record of an instance's last successful init, in
// its data dir: deleting the data dir deletes it too, so init runs again.
const initRecordName = "tfisolate-init.json"

// initRecord is what a terraform init depended on. Init is skipped when
// the record of the last successful init equals the current one and the
// data dir still holds what init put there.
type initRecord struct {
	// Version is the record's format (initRecordVersion when written).
	Version int `json:"version,omitempty"`
	// Fingerprint covers everything init depends on: the binary, the
	// CLI config the runner hands it, the lock file, the backend, the
	// module calls and installed modules, the root module's configuration
	// files (the engine's: .tofu files too under OpenTofu), the init
	// arguments and TF_CLI_ARGS*. Variable values count only where the
	// engine evaluates them at init (OpenTofu's early evaluation: a
	// backend, module source or version built from variables), through
	// the backend and the module calls; otherwise they change from run to
	// run and init never reads them.
	Fingerprint string `json:"fingerprint"`
	// Backend covers the backend configuration alone, to tell a changed
	// backend (reconfigure) from any other change: the backend blocks
	// however they are written (.tf, .tf.json, .tofu, .tofu.json), the
	// -backend-config values and files, and, with early evaluation, the
	// values of the variables the blocks read.
	Backend string `json:"backend"`
	// Parts are Fingerprint per named input (initFingerprint), so that
	// an init that runs again says what changed. A record of an older
	// version has none: it is still compared by Fingerprint.
	Parts map[string]string `json:"parts,omitempty"`
}

// initialize runs terraform init unless nothing it depends on changed
// since the instance's last successful init (force: run it anyway). A
// backend configuration that changed since then is migrated with
// Args.MigrateState, reconfigured with Args.Reconfigure or when the old
// state provably holds no resources, and refused otherwise
// (BackendChangedError). It returns whether init was skipped.
func (x *unitRun) initialize(ctx context.Context, manifest string, force bool) (skipped bool, err error) {
	x.emit(PhaseInit)
	a := x.u.Args
	plan, err := x.planInit(manifest, force)
	if err != nil {
		return false, err
	}
	files, now, prev, recPath := plan.files, plan.now, plan.prev, plan.recPath
	if plan.why == "" {
		x.out.note("init: skipped, nothing it depends on changed since the last init")
		return true, nil
	}
	if plan.prev != nil && !force {
		x.out.note("init: runs again: " + plan.why)
	}
	// Until this init succeeds, the record must not claim anything.
	if err := os.Remove(recPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove init record: %w", err)
	}
	// A changed backend is taken only as the caller says (MigrateState,
	// Reconfigure), or when the old state provably holds nothing.
	changed := func() error {
		switch {
		case a.MigrateState:
			x.out.note("init: the backend configuration changed since the last init; migrating the state")
		case a.Reconfigure:
			x.out.note("init: the backend configuration changed since the last init; reconfiguring as asked")
		default:
			if err := x.checkBackendChange(files); err != nil {
				return err
			}
			x.out.note("init: the backend configuration changed since the last init; the old state holds no resources, reconfiguring")
		}
		return nil
	}
	reconfigure := prev != nil && prev.Backend != now.Backend
	if reconfigure {
		if err := changed(); err != nil {
			return false, err
		}
	}
	run := func() error {
		_, err := x.run(ctx, PhaseInit, "init", func(string) tfcmd.Cmd { return a.initCmd(reconfigure) })
		return err
	}
	err = run()
	if err != nil && !reconfigure && !a.Reconfigure && ctx.Err() == nil && backendChanged(err) {
		// No record of the last init (an older workdir): terraform itself
		// noticed the change.
		if cerr := changed(); cerr != nil {
			return false, cerr
		}
		reconfigure = true
		err = run()
	}
	if err != nil {
		return false, err
	}
	now.Version = initRecordVersion
	b, _ := json.Marshal(now)
	if err := atomicfile.WriteFile(recPath, b, atomicfile.Record); err != nil {
		return false, fmt.Errorf("write init record: %w", err)
	}
	return false, nil
}

// initPlan is the decision whether a unit's init runs, made without
// running anything (initialize acts on it; DryRun reports it).
type initPlan struct {
	files   *rootConfig
	now     initRecord  // the record a successful init leaves
	prev    *initRecord // the last successful init's record; nil when none
	recPath string
	// why init runs; "" when it is skipped: nothing it depends on changed
	// since the last successful init and its products are in place.
	why string
}

// planInit decides whether init must run (force: it must) and why.
func (x *unitRun) planInit(manifest string, force bool) (initPlan, error) {
	a := x.u.Args
	files, err := x.readRootConfig()
	if err != nil {
		return initPlan{}, fmt.Errorf("read the root module: %w", err)
	}
	backend := backendFingerprint(files, x.dir, a.BackendConfig)
	ps := fingerprint.Parts{}
	p := initPlan{files: files, now: initRecord{Backend: backend, Fingerprint: x.initFingerprint(manifest, backend, files, ps)},
		recPath: filepath.Join(x.w.DataDir, initRecordName)}
	p.now.Parts = ps.Sums()
	var r initRecord
	if found, err := readRecord(p.recPath, initRecordVersion, &r); errors.Is(err, ErrNewerFormat) {
		return initPlan{}, err // a newer release's init: never redone and recorded over by this one
	} else if found && err == nil {
		p.prev = &r
	}
	switch {
	case force:
		p.why = "the command is init"
	case a.Upgrade:
		p.why = "-upgrade"
	// Args.Reconfigure is not a reason: it says how a changed backend is
	// taken, and init runs with it only when something changed (the
	// backend, or anything else init depends on). atmos sets it by
	// default; forcing init for it cost an init per unit per command.
	case p.prev == nil:
		p.why = "no record of an earlier successful init"
	case p.prev.Backend != backend:
		p.why = "the backend configuration changed"
	case p.prev.Fingerprint != p.now.Fingerprint:
		p.why = initChanged(p.prev.Parts, p.now.Parts)
	case !x.dataDirIntact(backend != "", len(x.tree.Calls) > 0):
		p.why = "the data dir lacks what the last init installed"
	}
	return p, nil
}

// initChanged says which inputs of init changed since the record of the
// last init, by name; a record of an older version names none.
func initChanged(prev, now map[string]string) string {
	if prev == nil {
		return "something init depends on changed since a record of an older version, which names no input " +
			"(engine, CLI config, lock file, module calls or installed modules, root configuration, init arguments)"
	}
	names := fingerprint.ChangedParts(prev, now)
	if len(names) == 0 {
		return "something init depends on changed"
	}
	return strings.Join(names, ", ") + " changed since the last init"
}

// initFingerprint is the init record's Fingerprint, with each input's
// part in p.
func (x *unitRun) initFingerprint(manifest, backend string, root *rootConfig, p fingerprint.Parts) string {
	fp := fingerprint.NewWithParts(p)
	e := x.rs.eng
	fp.AddString("engine", fingerprint.EngineID(e)+" "+e.Path)
	fp.Part("engine version", []byte(fingerprint.EngineID(e)))
	fp.Part("engine path", []byte(e.Path))
	if fi, err := os.Stat(e.Path); err == nil {
		fp.AddPart("binary", "engine binary", fmt.Appendf(nil, "%d %d", fi.Size(), fi.ModTime().UnixNano()))
	}
	if c := x.rs.cfg.cache; c != nil {
		// The runner's CLI config is the cache as a mirror. Its text also
		// lists every provider the cache holds, which grows with other
		// components' runs; what this unit takes from it is pinned by the
		// lock file, so where the cache keeps its packages (a release
		// that moves them re-inits each unit, so no data dir keeps a link
		// to the old place) and the user's own settings are what count.
		fp.AddPart("cliconfig", "CLI config", []byte("cache "+c.PackagesDir()+" user "+x.userDigest))
	} else if p := x.env["TF_CLI_CONFIG_FILE"]; p != "" {
		// No plugin cache: terraform reads the user's own CLI config.
		b, _ := readInput(p)
		fp.AddPart("cliconfig", "CLI config", b)
	}
	lock, _ := os.ReadFile(filepath.Join(x.dir, lockFileName)) // missing: empty, as AddFile
	fp.AddPart("lockfile", "lock file", lock)
	fp.AddPart("backend", "backend configuration", []byte(backend))
	key, _ := modinstall.Key(x.tree, x.dynamicCall(root.early))
	fp.AddPart("calls", "module calls", []byte(key))
	for _, f := range root.files {
		fp.AddPart("config "+f.Name, "configuration file "+f.Name, f.Data)
	}
	if manifest != "" {
		b, _ := os.ReadFile(manifest)
		fp.AddPart("modules", "installed modules", b)
	}
	a := x.u.Args
	a.early = earlyeval.Rules{} // the values init reads are in the backend and calls fields
	fp.AddPart("args", "init arguments", []byte(strings.Join(a.initCmd(false).Args, "\x00")))
	for _, k := range []string{"TF_CLI_ARGS", "TF_CLI_ARGS_init"} {
		fp.AddPart(k, fingerprint.EnvLabel(k), []byte(x.env[k]))
	}
	return fp.Sum()
}

// dataDirIntact checks that init's products are still in the data dir:
// every provider the lock file names, installed for this platform, the
// backend state when the root module has a backend, and the modules
// manifest when it calls modules (local ones included).
func (x *unitRun) dataDirIntact(hasBackend, hasModules bool) bool {
	dd := x.w.DataDir
	if hasBackend && !exists(filepath.Join(dd, "terraform.tfstate")) {
		return false
	}
	if hasModules && !exists(filepath.Join(dd, modulesDir, manifestName)) {
		return false
	}
	b, err := os.ReadFile(filepath.Join(x.dir, lockFileName))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	locks, err := pluginc.ParseLockFile(b)
	if err != nil {
		return false
	}
	for _, l := range locks {
		p := l.Provider
		d := filepath.Join(dd, "providers", p.Hostname, p.Namespace, p.Type, l.Version, x.rs.eng.Platform)
		if !exists(d) { // follows the symlink into the cache
			return false
		}
	}
	return true
}

// rootConfig is what init depends on in the root module, read once per
// init check for both the backend fingerprint and the init record.
type rootConfig struct {
	files []modtree.ConfigFile
	// early is set when the engine evaluates variables at init
	// (earlyEvaluation): what the backend and module calls may read.
	early *earlyeval.Inputs
}

// readRootConfig reads the root module's configuration files, the ones
// the unit's engine reads (modtree.ReadConfig: *.tf and *.tf.json, and
// under OpenTofu *.tofu and *.tofu.json, a NAME.tofu hiding NAME.tf;
// overrides included; not variable files), and, where the engine
// evaluates variables early, the values the unit gives them. Only regular
// files are opened. It reads once per unit: the module fetch (module
// sources built from variables), the init check and an init run again
// after all share what it read (nothing they run changes the root
// module's files, and the TF_VAR_* it reads are the same before and after
// the pipeline sets the unit's environment).
func (x *unitRun) readRootConfig() (*rootConfig, error) {
	if x.root != nil {
		return x.root, nil
	}
	env := x.env
	if env == nil && earlyEvaluation(x.rs.eng) {
		// Before the pipeline sets the unit's environment (the module
		// fetch): the same TF_VAR_* as the one it will set.
		env = unitEnv(processEnv(), x.w.Env(), "", x.u.Env)
	}
	root, err := readRootConfigAt(x.dir, configRule(x.rs.eng.Kind), earlyEvaluation(x.rs.eng), x.u.Args, env)
	if err == nil {
		x.root = root
	}
	return root, err
}

// readRootConfigAt is readRootConfig for the root module in dir, read by
// rule, with the unit's arguments and environment when early is set.
func readRootConfigAt(dir string, rule modtree.Files, early bool, a Args, env map[string]string) (*rootConfig, error) {
	cfs, err := modtree.ReadConfig(dir, nil, rule)
	if err != nil {
		return nil, err
	}
	root := &rootConfig{files: cfs}
	if early {
		root.early = newEarlyInputs(root.files, dir, a, env)
	}
	return root, nil
}

// needsInitRe matches terraform's ways of saying the working directory
// is not initialized for what it was asked to do.
var needsInitRe = regexp.MustCompile(`(?i)(terraform|tofu) init|initialization required|Required plugins are not installed|Module not installed|Inconsistent dependency lock file|Backend configuration changed`)

func needsInit(err error) bool { return needsInitRe.MatchString(tfcmd.Unwrapped(err)) }

var backendChangedRe = regexp.MustCompile(`(?i)Backend configuration changed|Backend initialization required`)

func backendChanged(err error) bool { return backendChangedRe.MatchString(tfcmd.Unwrapped(err)) }

// backendFingerprint is the init record's Backend: the digest of the
// backend configuration in root (backendcfg.Digest), with the
// -backend-config values and files (relative to dir) and, with early
// evaluation, what the backend blocks read. "" when the module has no
// backend.
func backendFingerprint(root *rootConfig, dir string, backendConfig []string) string {
	var early string
	if root.early != nil {
		early = root.early.BackendDigest()
	}
	return backendcfg.Digest(root.files, dir, backendConfig, early)
}
