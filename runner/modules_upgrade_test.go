package runner

// Scenarios of invariant 19's "never older" for remote modules: a module
// the caller upgraded is never replaced by an older one, and the other
// instances of the component get the upgrade too. The loopback registry
// publishes a new module version between runs.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/workdir"
)

// upgradeWorld is a registry serving one module (tfisolate/greet/tfitest)
// whose versions say their own version as an output, a component calling
// it with a version range, and a workdir root. No provider is needed, so
// the runner works without a plugin cache, under either engine.
type upgradeWorld struct {
	e     testenv.Engine
	dir   string
	reg   *testregistry.Server
	wd    *workdir.Manager
	src   string
	store string
	env   map[string]string // the unit's: the CLI config's host block and the CA
}

func newUpgradeWorld(t *testing.T, e testenv.Engine) *upgradeWorld {
	t.Helper()
	w := &upgradeWorld{e: e, dir: t.TempDir(), reg: testregistry.Start(t)}
	ca := filepath.Join(w.dir, "ca.pem")
	require.NoError(t, w.reg.WriteCAFile(ca))
	cfg := filepath.Join(w.dir, "user.tfrc")
	require.NoError(t, os.WriteFile(cfg, []byte(w.reg.ModuleServices()), 0o644))
	w.env = map[string]string{"TF_CLI_CONFIG_FILE": cfg, "SSL_CERT_FILE": ca}
	var err error
	w.wd, err = workdir.New(filepath.Join(w.dir, "workdirs"))
	require.NoError(t, err)
	w.store = filepath.Join(w.dir, "modules")
	w.src = filepath.Join(w.dir, "components", "greeter")
	require.NoError(t, os.MkdirAll(w.src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.src, "main.tf"), []byte(`
module "greet" {
  source  = "`+w.reg.ModuleSource("tfisolate", "greet", "tfitest")+`"
  version = ">= 1.0.0"
}
output "version" { value = module.greet.version }
`), 0o644))
	w.publish(t, "1.0.0")
	return w
}

// publish offers version v of the module; it outputs v.
func (w *upgradeWorld) publish(t *testing.T, v string) {
	t.Helper()
	require.NoError(t, w.reg.AddModule("tfisolate", "greet", "tfitest", v, map[string]string{
		"main.tf": `output "version" { value = "` + v + `" }` + "\n",
	}))
}

// downloads is how many times version v's archive was fetched.
func (w *upgradeWorld) downloads(v string) int {
	return w.reg.ModuleDownloads(testregistry.ModuleKey("tfisolate", "greet", "tfitest", v))
}

// runner returns a Runner with the world's module store, or with
// storeDir ("-": none).
func (w *upgradeWorld) runner(t *testing.T, storeDir string) *Runner {
	t.Helper()
	if storeDir == "" {
		storeDir = w.store
	}
	r, err := New(WithWorkdirs(w.wd), WithTerraform(w.e.Path), WithModuleStore(storeDir))
	require.NoError(t, err)
	return r
}

// unit is an instance of the component with a local state of its own.
func (w *upgradeWorld) unit(t *testing.T, instance string, upgrade bool) Unit {
	t.Helper()
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", instance, w.src,
		files(t, map[string]any{}, filepath.Join(w.dir, "states", instance+".tfstate"))), Env: w.env}
	u.Args.Upgrade = upgrade
	return u
}

// apply applies one unit and returns the module version it applied.
func (w *upgradeWorld) apply(t *testing.T, r *Runner, u Unit) string {
	t.Helper()
	v, _ := w.applyLog(t, r, u)
	return v
}

// applyLog is apply that also returns the unit's log.
func (w *upgradeWorld) applyLog(t *testing.T, r *Runner, u Unit) (string, string) {
	t.Helper()
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err, "%v", rep)
	require.Len(t, rep.Results, 1)
	res := rep.Results[0]
	require.Equal(t, Succeeded, res.Status, "%v", res.Err)
	return outputString(t, res, "version"), readFile(t, res.Log)
}

// TestModuleUpgradeRefreshesStore: an instance applied with module 1.0.0
// through a Runner with a module store; 1.1.0 is published and the
// instance applied with Args.Upgrade takes it; the next plain Apply keeps
// 1.1.0 (the store's 1.0.0 used to be copied back over it and applied
// silently), and another instance of the component, applied for the
// first time, gets 1.1.0 from the refreshed store without a download of
// its own. Under both engines.
func TestModuleUpgradeRefreshesStore(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newUpgradeWorld(t, e)
		r := w.runner(t, "")
		require.Equal(t, "1.0.0", w.apply(t, r, w.unit(t, "a", false)))

		w.publish(t, "1.1.0")
		require.Equal(t, "1.1.0", w.apply(t, r, w.unit(t, "a", true)), "the upgrade takes 1.1.0")
		fetched := w.downloads("1.1.0")
		require.Positive(t, fetched)

		require.Equal(t, "1.1.0", w.apply(t, r, w.unit(t, "a", false)), "a plain apply after the upgrade keeps 1.1.0")
		require.Equal(t, "1.1.0", w.apply(t, r, w.unit(t, "b", false)), "another instance gets the upgraded set")
		// A new Runner (another process) reads the same store.
		require.Equal(t, "1.1.0", w.apply(t, w.runner(t, ""), w.unit(t, "c", false)))
		require.Equal(t, fetched, w.downloads("1.1.0"), "the other instances copy the store's set")
		require.Equal(t, 1, w.downloads("1.0.0"))
	})
}

// TestModuleStoreOlderThanUnit: the store holds 1.0.0 while an instance
// already has 1.1.0 (upgraded by a Runner without the store, as an
// older tfisolate or a custom step running init -upgrade leaves it). A
// plain Apply through the store keeps the instance's 1.1.0 instead of
// copying the older set over it, and refreshes the store from it: an
// instance that had 1.0.0 then gets 1.1.0, and nothing is downloaded
// again. Under both engines.
func TestModuleStoreOlderThanUnit(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newUpgradeWorld(t, e)
		r := w.runner(t, "")
		require.Equal(t, "1.0.0", w.apply(t, r, w.unit(t, "a", false)))
		require.Equal(t, "1.0.0", w.apply(t, r, w.unit(t, "b", false)))

		w.publish(t, "1.1.0")
		require.Equal(t, "1.1.0", w.apply(t, w.runner(t, "-"), w.unit(t, "a", true)))
		fetched := w.downloads("1.1.0")

		v, log := w.applyLog(t, r, w.unit(t, "a", false))
		require.Equal(t, "1.1.0", v, "the store's older set is not copied over the unit's")
		require.Contains(t, log, "kept this unit's own modules: the shared set holds older versions (module.greet "+w.reg.ModuleSource("tfisolate", "greet", "tfitest")+": 1.1.0, the set has 1.0.0)")
		require.Contains(t, log, "the module store's set for this component is refreshed from this unit's newer modules")
		v, log = w.applyLog(t, r, w.unit(t, "b", false))
		require.Equal(t, "1.1.0", v, "the store was refreshed from the upgraded unit")
		require.Contains(t, log, "copied the shared remote modules into this unit's data dir")
		require.Equal(t, fetched, w.downloads("1.1.0"))
		require.Equal(t, 1, w.downloads("1.0.0"))
	})
}
