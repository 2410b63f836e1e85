package runner

// Scenarios that run under both engines, terraform and OpenTofu, with
// SHORT provider addresses ("tfisolate/tfitest"): each engine resolves
// them on its own default registry host, so the cache entry, the lock
// file and the CLI config must all be that engine's. The loopback
// registry's network mirror serves the test provider under both hosts,
// and the same test functions run once per engine (testenv.Engines).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tfaddr "github.com/hashicorp/terraform-registry-address"
	tofuaddr "github.com/opentofu/registry-address"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// shortSource is the test provider's address without a host.
const shortSource = testprovider.Namespace + "/" + testprovider.Type

// registryHost is the default provider registry host of engine k, taken
// from that engine's own address library, never written here.
func registryHost(t *testing.T, k engine.Kind) string {
	t.Helper()
	switch k {
	case engine.Terraform:
		return tfaddr.DefaultProviderRegistryHost.String()
	case engine.OpenTofu:
		return tofuaddr.DefaultProviderRegistryHost.String()
	}
	t.Fatalf("no registry host for engine %q", k)
	return ""
}

// otherKind is the engine that is not k.
func otherKind(k engine.Kind) engine.Kind {
	if k == engine.Terraform {
		return engine.OpenTofu
	}
	return engine.Terraform
}

// engineWorld is a real setup for one engine: its binary, the test
// provider offered by a loopback network mirror under both engines'
// default registry hosts, an empty plugin cache whose only source is that
// mirror, and a workdir root.
type engineWorld struct {
	e        testenv.Engine
	dir      string
	reg      *testregistry.Server
	pkg      testregistry.Package
	cacheDir string
	cache    *pluginc.Cache
	root     string
	wd       *workdir.Manager
}

func newEngineWorld(t *testing.T, e testenv.Engine) *engineWorld {
	t.Helper()
	w := &engineWorld{e: e, dir: t.TempDir()}
	bin := testprovider.Build(t)
	zip, err := os.ReadFile(bin.Zip(t, providerVersion))
	require.NoError(t, err)
	w.reg = testregistry.Start(t)
	w.reg.MirrorHosts(registryHost(t, engine.Terraform), registryHost(t, engine.OpenTofu))
	w.pkg = testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type,
		Version: providerVersion, Platform: testprovider.Platform, Zip: zip}
	w.reg.MustAdd(t, w.pkg)
	w.cacheDir = filepath.Join(w.dir, "cache")
	w.cache, err = pluginc.Open(w.cacheDir,
		pluginc.WithSource(pluginc.NetworkMirror(w.reg.MirrorURL())), pluginc.WithHTTPClient(w.reg.HTTPClient()))
	require.NoError(t, err)
	w.root = filepath.Join(w.dir, "workdirs")
	w.wd, err = workdir.New(w.root)
	require.NoError(t, err)
	return w
}

// host is this world's engine's default registry host.
func (w *engineWorld) host(t *testing.T) string { return registryHost(t, w.e.Kind) }

// providerAddr is the test provider's full address on this engine.
func (w *engineWorld) providerAddr(t *testing.T) string { return w.host(t) + "/" + shortSource }

func (w *engineWorld) runner(t *testing.T, opts ...Option) *Runner {
	t.Helper()
	r, err := New(append([]Option{WithWorkdirs(w.wd), WithPluginCache(w.cache), WithTerraform(w.e.Path)}, opts...)...)
	require.NoError(t, err)
	return r
}

// statePath is where the local backend of state name lives.
func (w *engineWorld) statePath(name string) string {
	return filepath.Join(w.dir, "states", name+".tfstate")
}

// unit is an instance of src in stack plat-ue2-dev with vars and a local
// backend at statePath(state).
func (w *engineWorld) unit(t *testing.T, instance, src string, vars map[string]any, state string) Unit {
	t.Helper()
	return Unit{Workdir: workdirSpec("plat-ue2-dev", instance, src, files(t, vars, w.statePath(state)))}
}

// lockFile returns the .terraform.lock.hcl the runner left in an
// instance's workdir.
func (w *engineWorld) lockFile(t *testing.T, instance string) []byte {
	t.Helper()
	return unitLockFile(t, w.wd, "plat-ue2-dev", instance)
}

// unitLockFile returns the .terraform.lock.hcl the runner left in the
// workdir of (stack, instance) under m.
func unitLockFile(t *testing.T, m *workdir.Manager, stack, instance string) []byte {
	t.Helper()
	home, err := m.Home(stack, instance)
	require.NoError(t, err)
	var found []byte
	require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == lockFileName && found == nil {
			found, err = os.ReadFile(p)
		}
		return err
	}))
	require.NotNil(t, found, "no lock file under %s", home)
	return found
}

// requireEngineLock checks that a lock file pins exactly the test
// provider, under this engine's host and never the other's.
func (w *engineWorld) requireEngineLock(t *testing.T, b []byte) {
	t.Helper()
	locks, err := pluginc.ParseLockFile(b)
	require.NoError(t, err, "%s", b)
	require.Len(t, locks, 1, "%s", b)
	require.Equal(t, w.providerAddr(t), locks[0].Provider.String(), "the lock names the provider with the engine's host")
	require.Equal(t, providerVersion, locks[0].Version)
	require.NotEmpty(t, locks[0].Hashes)
	require.NotContains(t, string(b), registryHost(t, otherKind(w.e.Kind)))
}

// fixture returns the absolute path of the component testdata/engines/name
// and checks that it names the test provider by its short address.
func fixture(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "engines", name))
	require.NoError(t, err)
	main, err := os.ReadFile(filepath.Join(dir, "main.tf"))
	require.NoError(t, err)
	require.Regexp(t, `source\s*=\s*"`+regexp.QuoteMeta(shortSource)+`"\n`, string(main), "%s must use the short provider address", dir)
	return dir
}

// requireSourceClean checks that nothing was written into a component's
// source dir (invariant 1).
func requireSourceClean(t *testing.T, src string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"main.tf"}, names, "the component source %s was written", src)
}

// runEngine runs the engine binary itself (not through the runner) in
// dir with env and returns its combined output.
func runEngine(ctx context.Context, path, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// engineVersion asks the binary at path for its version, as its own
// `version -json` reports it.
func engineVersion(t *testing.T, path string) string {
	t.Helper()
	cli := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	cmd := exec.CommandContext(testCtx(t), path, "version", "-json")
	cmd.Env = testenv.TerraformEnv(cli)
	out, err := cmd.Output()
	require.NoError(t, err)
	var v struct {
		Version string `json:"terraform_version"` // tofu keeps terraform's key
	}
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	require.NotEmpty(t, v.Version, "%s", out)
	return v.Version
}

// requireEngine checks that a report says the run used engine e.
func requireEngine(t *testing.T, e testenv.Engine, version string, rep *Report) {
	t.Helper()
	require.Equal(t, string(e.Kind), rep.Engine.Kind)
	require.Equal(t, version, rep.Engine.Version)
	require.Equal(t, e.Path, rep.Engine.Path)
}

// TestEnginesShortAddresses applies twelve instances of one component
// whose provider has a short address, in parallel, from an empty cache,
// under each engine. All twelve succeed; the package is downloaded once
// and cached under the engine's own registry host; every instance gets
// the same lock file, which names the provider with that host; and the
// engine itself, run by hand with the cache as a filesystem mirror,
// accepts that lock file with init -lockfile=readonly and leaves it
// byte for byte as it was.
func TestEnginesShortAddresses(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		host := w.host(t)
		src := fixture(t, "item")
		var units []Unit
		for i := range 12 {
			inst := fmt.Sprintf("item/item-%02d", i)
			units = append(units, w.unit(t, inst, src, map[string]any{"name": inst}, fmt.Sprintf("%02d", i)))
		}
		r := w.runner(t, WithParallelism(12))
		rep, err := r.Run(testCtx(t), Apply, units...)
		require.NoError(t, err)
		requireEngine(t, e, engineVersion(t, e.Path), rep)
		require.Len(t, rep.Results, 12)

		var first []byte
		for i, res := range rep.Results {
			inst := units[i].Workdir.Instance
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			items := stateResources(t, w.statePath(fmt.Sprintf("%02d", i)))
			require.Equal(t, inst, items["tfitest_item.this"]["name"], "%s applied its own item", res.Unit)
			lf := w.lockFile(t, inst)
			if first == nil {
				first = lf
				w.requireEngineLock(t, lf)
			}
			require.Equal(t, string(first), string(lf), "%s got a different lock file", res.Unit)
		}

		// One download, for twelve units, into the engine's host dir only.
		require.Equal(t, 1, w.reg.Downloads(w.pkg.Key()))
		require.Equal(t, 1, w.reg.TotalDownloads())
		require.EqualValues(t, 1, w.cache.Stats().Downloads)
		require.DirExists(t, filepath.Join(w.cache.PackagesDir(), host, testprovider.Namespace, testprovider.Type, providerVersion, testprovider.Platform))
		require.NoDirExists(t, filepath.Join(w.cache.PackagesDir(), registryHost(t, otherKind(e.Kind))))
		requireSourceClean(t, src)

		// The engine's own verdict on the lock file: init in the unit's
		// workdir, with its data dir and with a fresh one (a real install
		// from the mirror, checked against the lock), in readonly mode.
		cli := filepath.Join(w.dir, "mirror.tfrc")
		cfg := w.cache.CLIConfig()
		require.Contains(t, string(cfg), `"`+w.providerAddr(t)+`"`, "the CLI config routes the engine's address to the cache")
		require.NoError(t, os.WriteFile(cli, cfg, 0o644))
		wd, err := w.wd.Prepare(testCtx(t), units[0].Workdir)
		require.NoError(t, err)
		defer func() { require.NoError(t, wd.Close()) }()
		before, err := os.ReadFile(filepath.Join(wd.Dir, lockFileName))
		require.NoError(t, err)
		require.Equal(t, string(first), string(before))
		for _, dataDir := range []string{wd.DataDir, filepath.Join(w.dir, "fresh-data")} {
			env := append(testenv.TerraformEnv(cli), "TF_DATA_DIR="+dataDir)
			out, err := runEngine(testCtx(t), e.Path, wd.Dir, env, "init", "-input=false", "-no-color", "-lockfile=readonly")
			require.NoError(t, err, "%s init -lockfile=readonly with TF_DATA_DIR=%s:\n%s", e.Kind, dataDir, out)
			after, err := os.ReadFile(filepath.Join(wd.Dir, lockFileName))
			require.NoError(t, err)
			require.Equal(t, string(before), string(after), "%s init changed the lock file", e.Kind)
		}
		require.Equal(t, 1, w.reg.TotalDownloads(), "the engine installed from the cache, not the mirror")

		// The check has teeth: the same configuration with the lock entry
		// under the other engine's host is refused in readonly mode.
		wrong := filepath.Join(w.dir, "wrong-host")
		require.NoError(t, os.CopyFS(wrong, os.DirFS(wd.Dir)))
		swapped := strings.ReplaceAll(string(before), `"`+w.providerAddr(t)+`"`, `"`+registryHost(t, otherKind(e.Kind))+"/"+shortSource+`"`)
		require.NotEqual(t, string(before), swapped)
		require.NoError(t, os.WriteFile(filepath.Join(wrong, lockFileName), []byte(swapped), 0o644))
		env := append(testenv.TerraformEnv(cli), "TF_DATA_DIR="+filepath.Join(w.dir, "wrong-data"))
		out, err := runEngine(testCtx(t), e.Path, wrong, env, "init", "-input=false", "-no-color", "-lockfile=readonly")
		require.Error(t, err, "%s accepted a lock file written for the other engine:\n%s", e.Kind, out)
		require.Contains(t, out, "Provider dependency changes detected", "refused for the lock file, not for something else")
	})
}

// TestEnginesSavedPlan plans a few instances into saved plans and applies
// exactly those plans, under each engine: the plan summary, the show
// -json document (written by the engine itself) and the outputs after
// ApplyPlan.
func TestEnginesSavedPlan(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		version := engineVersion(t, e.Path)
		src := fixture(t, "item")
		var units []Unit
		for i := range 3 {
			inst := fmt.Sprintf("item/planned-%d", i)
			units = append(units, w.unit(t, inst, src, map[string]any{"name": inst}, fmt.Sprintf("planned-%d", i)))
		}
		r := w.runner(t)
		wantChanges := func(action string) []ResourceChange {
			return []ResourceChange{
				{Address: "terraform_data.meta", Actions: []string{action}},
				{Address: "tfitest_item.this", Actions: []string{action}},
			}
		}

		rep, err := r.Run(testCtx(t), SavePlan, units...)
		require.NoError(t, err)
		requireEngine(t, e, version, rep)
		for i, res := range rep.Results {
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			require.True(t, res.HasChanges)
			p := res.Plan
			require.NotNil(t, p, "%s has no plan summary", res.Unit)
			require.FileExists(t, p.File)
			require.False(t, p.DestroyPlan)
			require.Equal(t, [4]int{2, 0, 0, 0}, [4]int{p.Add, p.Change, p.Destroy, p.Import})
			require.Equal(t, wantChanges("create"), p.Changes)
			requireShowJSON(t, p.JSONFile, map[string][]string{"terraform_data.meta": {"create"}, "tfitest_item.this": {"create"}})
			requireJSONVersion(t, p.JSONFile, version)
			require.NoFileExists(t, w.statePath(fmt.Sprintf("planned-%d", i)), "a plan must not write state")
		}

		rep, err = r.Run(testCtx(t), ApplyPlan, units...)
		require.NoError(t, err)
		requireEngine(t, e, version, rep)
		for i, res := range rep.Results {
			inst := units[i].Workdir.Instance
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			require.NotNil(t, res.Plan, "%s: the applied plan", res.Unit)
			require.Equal(t, [4]int{2, 0, 0, 0}, [4]int{res.Plan.Add, res.Plan.Change, res.Plan.Destroy, res.Plan.Import})
			require.Equal(t, wantChanges("create"), res.Plan.Changes)
			require.Equal(t, "item-"+inst, outputString(t, res, "id"))
			require.Equal(t, inst, outputString(t, res, "meta"))
			require.True(t, res.Outputs["secret"].Sensitive)
			items := stateResources(t, w.statePath(fmt.Sprintf("planned-%d", i)))
			require.Len(t, items, 2)
			require.Equal(t, inst, items["tfitest_item.this"]["name"])
			log := readFile(t, res.Log)
			require.Contains(t, log, "Apply complete! Resources: 2 added")
			require.NotContains(t, log, "Plan:", "ApplyPlan never re-plans")
			w.requireEngineLock(t, w.lockFile(t, inst))
		}
		require.Equal(t, 1, w.reg.TotalDownloads())
		requireSourceClean(t, src)
	})
}

// requireJSONVersion checks that a show -json document was written by the
// engine of the given version.
func requireJSONVersion(t *testing.T, path, version string) {
	t.Helper()
	var doc struct {
		Version string `json:"terraform_version"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, path)), &doc))
	require.Equal(t, version, doc.Version, "%s was not written by this engine", path)
}

// TestEnginesOutputs applies an instance and then reads its outputs with
// the Output command, under each engine: both give the same outputs
// (values, types, sensitivity), and the values are the configuration's.
func TestEnginesOutputs(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		version := engineVersion(t, e.Path)
		const inst = "item/outputs"
		u := w.unit(t, inst, fixture(t, "item"), map[string]any{"name": inst}, "outputs")
		r := w.runner(t)

		got := map[string]map[string]OutputValue{}
		for _, cmd := range []Command{Apply, Output} {
			rep, err := r.Run(testCtx(t), cmd, u)
			require.NoError(t, err, "%s", cmd)
			requireEngine(t, e, version, rep)
			res := rep.Results[0]
			require.Equal(t, Succeeded, res.Status, "%s: %v", cmd, res.Err)
			outs := res.Outputs
			require.Len(t, outs, 5, "%s: %v", cmd, outs)
			check := func(name, value, typ string, sensitive bool) {
				t.Helper()
				o, ok := outs[name]
				require.True(t, ok, "%s: no output %q", cmd, name)
				require.JSONEq(t, value, string(o.Value), "%s: value of %s", cmd, name)
				require.JSONEq(t, typ, string(o.Type), "%s: type of %s", cmd, name)
				require.Equal(t, sensitive, o.Sensitive, "%s: sensitivity of %s", cmd, name)
			}
			check("id", `"item-`+inst+`"`, `"string"`, false)
			check("meta", `"`+inst+`"`, `"string"`, false)
			check("tags", `{"name":"`+inst+`","kind":"item"}`, `["map","string"]`, false)
			check("size", fmt.Sprint(len(inst)), `"number"`, false)
			check("secret", `"secret-`+inst+`"`, `"string"`, true)
			got[cmd.String()] = outs
		}
		apply, output := got[Apply.String()], got[Output.String()]
		require.Len(t, output, len(apply))
		for name, a := range apply {
			o := output[name]
			require.JSONEq(t, string(a.Value), string(o.Value), "value of %s", name)
			require.JSONEq(t, string(a.Type), string(o.Type), "type of %s", name)
			require.Equal(t, a.Sensitive, o.Sensitive, "sensitivity of %s", name)
		}
		require.Equal(t, 1, w.reg.TotalDownloads())
	})
}
