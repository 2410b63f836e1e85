package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/pluginc"
)

// initRecordName is the record of an instance's last successful init, in
// its data dir: deleting the data dir deletes it too, so init runs again.
const initRecordName = "tfisolate-init.json"

// initRecord is what a terraform init depended on. Init is skipped when
// the record of the last successful init equals the current one and the
// data dir still holds what init put there.
type initRecord struct {
	// Fingerprint covers everything init depends on: the binary, the
	// CLI config the runner hands it, the lock file, the backend, the
	// module calls and installed modules, the root module's configuration
	// files, the init arguments and TF_CLI_ARGS*. Variable files are left
	// out: they change from run to run and init never reads them.
	Fingerprint string `json:"fingerprint"`
	// Backend covers the backend configuration alone, to tell a changed
	// backend (reconfigure) from any other change.
	Backend string `json:"backend"`
}

// initialize runs terraform init unless nothing it depends on changed
// since the instance's last successful init (force: run it anyway). A
// backend configuration that changed since then is migrated with
// Args.MigrateState, reconfigured with Args.Reconfigure or when the old
// state provably holds no resources, and refused otherwise
// (BackendChangedError).
func (x *unitRun) initialize(ctx context.Context, manifest string, force bool) error {
	x.emit(PhaseInit)
	a := x.u.Args
	files, err := readRootConfig(x.dir)
	if err != nil {
		return fmt.Errorf("read the root module: %w", err)
	}
	backend := backendFingerprint(files, x.dir, a.BackendConfig)
	now := initRecord{Backend: backend, Fingerprint: x.initFingerprint(manifest, backend, files)}
	recPath := filepath.Join(x.w.DataDir, initRecordName)
	var prev *initRecord
	if b, err := os.ReadFile(recPath); err == nil {
		var r initRecord
		if json.Unmarshal(b, &r) == nil {
			prev = &r
		}
	}
	if !force && !a.Upgrade && !a.Reconfigure && prev != nil && *prev == now && x.dataDirIntact(backend != "", len(x.tree.Calls) > 0) {
		x.res.InitSkipped = true
		x.out.note("init: skipped, nothing it depends on changed since the last init")
		return nil
	}
	// Until this init succeeds, the record must not claim anything.
	if err := os.Remove(recPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove init record: %w", err)
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
	reconfigure := prev != nil && prev.Backend != backend
	if reconfigure {
		if err := changed(); err != nil {
			return err
		}
	}
	run := func() error {
		_, err := x.run(ctx, PhaseInit, "init", func(string) []string { return initArgs(a, reconfigure) }, runOpts{})
		return err
	}
	err = run()
	if err != nil && !reconfigure && !a.Reconfigure && ctx.Err() == nil && backendChanged(err) {
		// No record of the last init (an older workdir): terraform itself
		// noticed the change.
		if cerr := changed(); cerr != nil {
			return cerr
		}
		reconfigure = true
		err = run()
	}
	if err != nil {
		return err
	}
	b, _ := json.Marshal(now)
	if err := atomicfile.WriteFile(recPath, b, 0o644); err != nil {
		return fmt.Errorf("write init record: %w", err)
	}
	return nil
}

func (x *unitRun) initFingerprint(manifest, backend string, files []configFile) string {
	h := sha256.New()
	field := func(name string, v []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(v))
		h.Write(v)
	}
	e := x.rs.eng
	field("engine", []byte(string(e.Kind)+" "+e.Version.String()+" "+e.Path))
	if fi, err := os.Stat(e.Path); err == nil {
		field("binary", fmt.Appendf(nil, "%d %d", fi.Size(), fi.ModTime().UnixNano()))
	}
	if c := x.rs.cfg.cache; c != nil {
		// The runner's CLI config is the cache as a mirror. Its text also
		// lists every provider the cache holds, which grows with other
		// components' runs; what this unit takes from it is pinned by the
		// lock file, so the cache's location and the user's own settings
		// are what count.
		field("cliconfig", []byte("cache "+c.Dir()+" user "+x.userDigest))
	} else if p := x.env["TF_CLI_CONFIG_FILE"]; p != "" {
		// No plugin cache: terraform reads the user's own CLI config.
		b, _ := os.ReadFile(p)
		field("cliconfig", b)
	}
	lock, _ := os.ReadFile(filepath.Join(x.dir, lockFileName))
	field("lockfile", lock)
	field("backend", []byte(backend))
	key, _ := moduleKey(x.tree)
	field("calls", []byte(key))
	for _, f := range files {
		field("config "+f.name, f.data)
	}
	if manifest != "" {
		m, _ := os.ReadFile(manifest)
		field("modules", m)
	}
	field("args", []byte(strings.Join(initArgs(x.u.Args, false), "\x00")))
	for _, k := range []string{"TF_CLI_ARGS", "TF_CLI_ARGS_init"} {
		field(k, []byte(x.env[k]))
	}
	return hex.EncodeToString(h.Sum(nil))
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

// configFile is one of the root module's configuration files.
type configFile struct {
	name string
	data []byte
}

// readRootConfig reads the root module's configuration files (*.tf and
// *.tf.json, overrides included; not variable files), once per unit for
// both the backend fingerprint and the init record. Only regular files
// are opened.
func readRootConfig(dir string) ([]configFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []configFile
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, configFile{name: n, data: b})
	}
	return out, nil
}

// needsInitRe matches terraform's ways of saying the working directory
// is not initialized for what it was asked to do.
var needsInitRe = regexp.MustCompile(`(?i)(terraform|tofu) init|initialization required|Required plugins are not installed|Module not installed|Inconsistent dependency lock file|Backend configuration changed`)

func needsInit(err error) bool { return needsInitRe.MatchString(err.Error()) }

var backendChangedRe = regexp.MustCompile(`(?i)Backend configuration changed|Backend initialization required`)

func backendChanged(err error) bool { return backendChangedRe.MatchString(err.Error()) }

// backendFingerprint hashes the root module's backend (or cloud) blocks,
// in HCL and JSON files, with the -backend-config values and the
// content of the files they name (relative to dir). "" when the module
// has no backend.
func backendFingerprint(files []configFile, dir string, backendConfig []string) string {
	var parts []string
	for _, f := range files {
		if strings.HasSuffix(f.name, ".tf") {
			parts = append(parts, hclBackends(f.data)...)
		} else {
			parts = append(parts, jsonBackends(f.data)...)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "block %d\n%s", len(p), p)
	}
	for _, bc := range backendConfig {
		fmt.Fprintf(h, "config %s\n", bc)
		p := bc
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !strings.Contains(bc, "=") || exists(p) {
			if b, err := os.ReadFile(p); err == nil {
				fmt.Fprintf(h, "file %d\n", len(b))
				h.Write(b)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hclBackends returns the source text of every backend and cloud block
// inside terraform blocks. A file that does not parse gives none:
// terraform reports it.
func hclBackends(src []byte) []string {
	f, diags := hclsyntax.ParseConfig(src, "x.tf", hcl.InitialPos)
	if diags.HasErrors() {
		return nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []string
	for _, b := range body.Blocks {
		if b.Type != "terraform" {
			continue
		}
		for _, in := range b.Body.Blocks {
			if in.Type == "backend" || in.Type == "cloud" {
				r := in.Range()
				out = append(out, string(src[r.Start.Byte:r.End.Byte]))
			}
		}
	}
	return out
}

// jsonBackends returns the backend and cloud settings of a .tf.json
// file's terraform blocks, re-encoded canonically.
func jsonBackends(src []byte) []string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(src, &doc) != nil {
		return nil
	}
	raw, ok := doc["terraform"]
	if !ok {
		return nil
	}
	var blocks []map[string]any
	var one map[string]any
	if json.Unmarshal(raw, &one) == nil {
		blocks = []map[string]any{one}
	} else if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		for _, k := range []string{"backend", "cloud"} {
			if v, ok := b[k]; ok {
				c, _ := json.Marshal(v) // maps marshal with sorted keys
				out = append(out, k+" "+string(c))
			}
		}
	}
	return out
}
