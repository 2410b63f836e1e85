package runner

import (
	"archive/zip"
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/testprovider"
)

// moduleServer serves one module as a zip archive over loopback HTTPS,
// counting the archive downloads (GETs, failed ones too; terraform's
// getter also sends HEADs). Terraform trusts it through SSL_CERT_FILE, which the runner
// passes on from the process environment.
type moduleServer struct {
	srv       *httptest.Server
	downloads atomic.Int64
	fail      atomic.Bool // answer 500
	// holding makes every archive GET signal requested and then wait
	// until hold is closed (or the client goes away).
	holding   atomic.Bool
	hold      chan struct{}
	requested chan struct{}
}

const moduleArchivePath = "/modules/redis.zip"

func startModuleServer(t *testing.T, files map[string]string) *moduleServer {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		f, err := zw.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	archive := buf.Bytes()
	ms := &moduleServer{hold: make(chan struct{}), requested: make(chan struct{}, 1)}
	ms.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != moduleArchivePath {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodGet {
			ms.downloads.Add(1)
			if ms.holding.Load() {
				select {
				case ms.requested <- struct{}{}:
				default:
				}
				select {
				case <-ms.hold:
				case <-r.Context().Done():
					return
				}
			}
		}
		if ms.fail.Load() {
			http.Error(w, "module store is down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(archive)
	}))
	t.Cleanup(ms.srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ms.srv.Certificate().Raw}), 0o644))
	t.Setenv("SSL_CERT_FILE", ca)
	return ms
}

func (ms *moduleServer) source() string { return ms.srv.URL + moduleArchivePath }

// redisModule is a remote module: the only place the test provider is
// required.
const redisModule = `
terraform {
  required_providers {
    tfitest = {
      source  = "` + testprovider.Source + `"
      version = ">= 1.0.0"
    }
  }
}
variable "name" { type = string }
resource "tfitest_item" "this" { name = var.name }
`

// remoteComponent requires no provider itself; it calls the remote module.
func remoteComponent(source string) string {
	return `
variable "name" { type = string }
module "redis" {
  source = "` + source + `"
  name   = var.name
}
`
}

// TestRemoteModuleFetchedOnce applies six instances of a component whose
// only provider requirement sits in a remote module served as an HTTPS
// archive: the archive is downloaded once for all six (the leader's
// terraform get; no unit's terraform init fetches it again), the provider
// goes through the shared cache (one registry download) and into every
// unit's lock file, and every unit holds its own copy of the module.
func TestRemoteModuleFetchedOnce(t *testing.T) {
	w := newWorld(t)
	ms := startModuleServer(t, map[string]string{"main.tf": redisModule})
	src := w.component(t, "redis", remoteComponent(ms.source()))
	states := filepath.Join(w.dir, "states")
	var units []Unit
	for i := range 6 {
		inst := fmt.Sprintf("elasticache/redis-%d", i)
		units = append(units, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src,
			files(t, map[string]any{"name": inst}, filepath.Join(states, fmt.Sprintf("%d.tfstate", i))))})
	}
	r := w.runner(t, WithParallelism(6))
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)

	require.EqualValues(t, 1, ms.downloads.Load(), "the module archive is fetched once")
	require.Equal(t, 1, w.reg.Downloads(w.pkg.Key()), "the provider only the module needs comes from the shared cache")
	require.Equal(t, 1, w.reg.TotalDownloads())
	fetched := 0
	for i, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		inst := units[i].Workdir.Instance
		items := stateResources(t, filepath.Join(states, fmt.Sprintf("%d.tfstate", i)))
		require.Equal(t, inst, items["tfitest_item.this"]["name"])
		require.Contains(t, string(lockFileOf(t, w, "plat-ue2-dev", inst)), `provider "`+testprovider.Source+`"`)
		log, err := os.ReadFile(res.Log)
		require.NoError(t, err)
		if strings.Contains(string(log), "Downloading "+ms.source()) {
			fetched++
		}
		// The unit's own copy: its manifest points into its own data dir.
		home, err := w.wd.Home("plat-ue2-dev", inst)
		require.NoError(t, err)
		dataDir := filepath.Join(home, ".tfisolate", "data")
		b, err := os.ReadFile(filepath.Join(dataDir, "modules", "modules.json"))
		require.NoError(t, err)
		recs, err := modmanifest.Parse(b)
		require.NoError(t, err)
		var dirs []string
		for _, rec := range recs {
			if rec.Key == "redis" {
				dirs = append(dirs, rec.Dir)
			}
		}
		require.Equal(t, []string{filepath.ToSlash(filepath.Join(dataDir, "modules", "redis"))}, dirs)
		require.FileExists(t, filepath.Join(dataDir, "modules", "redis", "main.tf"))
	}
	require.Equal(t, 1, fetched, "only the leader's log shows the download")

	// A second run finds every unit's modules in place: nothing is fetched.
	rep, err = r.Run(testCtx(t), Init, units...)
	require.NoError(t, err, "%v", rep)
	require.EqualValues(t, 1, ms.downloads.Load())
}

// TestRemoteModuleFetchFailure makes the module archive answer 500: the
// leader's terraform get fails, and every unit fails with ErrModules and
// the cause, the followers naming the leader; no provider is downloaded and
// nothing is applied.
func TestRemoteModuleFetchFailure(t *testing.T) {
	w := newWorld(t)
	ms := startModuleServer(t, map[string]string{"main.tf": redisModule})
	ms.fail.Store(true)
	src := w.component(t, "redis", remoteComponent(ms.source()))
	var units []Unit
	for _, inst := range []string{"a", "b", "c", "d"} {
		units = append(units, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src,
			files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate")))})
	}
	rep, err := w.runner(t, WithParallelism(4)).Run(testCtx(t), Apply, units...)
	require.ErrorIs(t, err, ErrModules)
	leaders := 0
	for _, res := range rep.Results {
		require.Equal(t, Failed, res.Status)
		require.ErrorIs(t, res.Err, ErrModules)
		require.Contains(t, res.Err.Error(), ms.source()+`": bad response code: 500`, "the cause is reported")
		if !strings.Contains(res.Err.Error(), "shared with plat-ue2-dev/") {
			leaders++
		}
		_, err := os.Stat(filepath.Join(w.dir, res.Unit[len("plat-ue2-dev/"):]+".tfstate"))
		require.ErrorIs(t, err, os.ErrNotExist, "terraform must not have applied")
	}
	require.Equal(t, 1, leaders, "one leader, three followers")
	require.EqualValues(t, 1, ms.downloads.Load(), "only the leader tried")
	require.Equal(t, 0, w.reg.TotalDownloads())
}

// TestRemoteModuleInLocalModule puts the remote call inside a local module
// outside the component's directory (../modules/net): the workdir layout
// grows, the manifest's relative Dir for the local module stays as it is,
// and the remote module is still fetched once and copied per unit.
func TestRemoteModuleInLocalModule(t *testing.T) {
	w := newWorld(t)
	ms := startModuleServer(t, map[string]string{"main.tf": redisModule})
	net := filepath.Join(w.dir, "components", "modules", "net")
	require.NoError(t, os.MkdirAll(net, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(net, "main.tf"), []byte(remoteComponent(ms.source())), 0o644))
	src := w.component(t, "cache", `
variable "name" { type = string }
module "net" {
  source = "../modules/net"
  name   = var.name
}
`)
	var units []Unit
	for _, inst := range []string{"a", "b", "c"} {
		units = append(units, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src,
			files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate")))})
	}
	rep, err := w.runner(t, WithParallelism(3)).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	require.EqualValues(t, 1, ms.downloads.Load())
	require.Equal(t, 1, w.reg.TotalDownloads())
	for i, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		inst := units[i].Workdir.Instance
		require.Equal(t, inst, stateResources(t, filepath.Join(w.dir, inst+".tfstate"))["tfitest_item.this"]["name"])
		require.Contains(t, string(lockFileOf(t, w, "plat-ue2-dev", inst)), `provider "`+testprovider.Source+`"`)
		home, err := w.wd.Home("plat-ue2-dev", inst)
		require.NoError(t, err)
		dataDir := filepath.Join(home, ".tfisolate", "data")
		b, err := os.ReadFile(filepath.Join(dataDir, "modules", "modules.json"))
		require.NoError(t, err)
		recs, err := modmanifest.Parse(b)
		require.NoError(t, err)
		dirs := map[string]string{}
		for _, rec := range recs {
			dirs[rec.Key] = rec.Dir
		}
		require.Equal(t, "../modules/net", dirs["net"])
		require.Equal(t, filepath.ToSlash(filepath.Join(dataDir, "modules", "net.redis")), dirs["net.redis"])
	}
}

// TestOlderModules is the "never older" comparison: which of a unit's
// installed modules a set holds in an older version.
func TestOlderModules(t *testing.T) {
	const src = "registry.tfisolate.test/tfisolate/greet/tfitest"
	rec := func(key, source, ver string) modmanifest.Record {
		return modmanifest.Record{Key: key, Source: source, Version: ver, Dir: ".terraform/modules/" + key}
	}
	root := modmanifest.Record{Key: "", Source: "", Dir: "."}
	calls := []modtree.Call{{Key: "greet", Source: src, Version: ">= 1.0.0"}, {Key: "pinned", Source: src, Version: "~> 1.0.0"}}
	cases := []struct {
		name      string
		have, set []modmanifest.Record
		want      []string
	}{
		{name: "set older", have: []modmanifest.Record{root, rec("greet", src, "1.1.0")}, set: []modmanifest.Record{root, rec("greet", src, "1.0.0")},
			want: []string{"module.greet " + src + ": 1.1.0, the set has 1.0.0"}},
		{name: "set newer", have: []modmanifest.Record{rec("greet", src, "1.0.0")}, set: []modmanifest.Record{rec("greet", src, "1.1.0")}},
		{name: "same", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("greet", src, "1.1.0")}},
		{name: "patch and prerelease order", have: []modmanifest.Record{rec("greet", src, "1.0.10")}, set: []modmanifest.Record{rec("greet", src, "1.0.10-rc.1")},
			want: []string{"module.greet " + src + ": 1.0.10, the set has 1.0.10-rc.1"}},
		{name: "another source", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("greet", src+"x", "1.0.0")}},
		{name: "not in the set", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("other", src, "1.0.0")}},
		{name: "no versions (not a registry module)", have: []modmanifest.Record{rec("greet", "git::https://example.test/m.git", "")},
			set: []modmanifest.Record{rec("greet", "git::https://example.test/m.git", "")}},
		{name: "unparsable version", have: []modmanifest.Record{rec("greet", src, "latest")}, set: []modmanifest.Record{rec("greet", src, "1.0.0")}},
		{name: "the constraint no longer allows the unit's", have: []modmanifest.Record{rec("pinned", src, "1.1.0")}, set: []modmanifest.Record{rec("pinned", src, "1.0.5")}},
		{name: "the constraint allows the unit's", have: []modmanifest.Record{rec("pinned", src, "1.0.7")}, set: []modmanifest.Record{rec("pinned", src, "1.0.5")},
			want: []string{"module.pinned " + src + ": 1.0.7, the set has 1.0.5"}},
		{name: "nested module, constraint unknown", have: []modmanifest.Record{rec("greet.inner", src, "2.0.0")}, set: []modmanifest.Record{rec("greet.inner", src, "1.9.0")},
			want: []string{"module.greet.inner " + src + ": 2.0.0, the set has 1.9.0"}},
		{name: "several, sorted; newer ones ignored",
			have: []modmanifest.Record{rec("z", src, "3.0.0"), rec("greet", src, "1.2.0"), rec("b", src, "1.0.0")},
			set:  []modmanifest.Record{rec("greet", src, "1.1.0"), rec("b", src, "1.5.0"), rec("z", src, "2.0.0")},
			want: []string{"module.greet " + src + ": 1.2.0, the set has 1.1.0", "module.z " + src + ": 3.0.0, the set has 2.0.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, olderModules(tc.have, tc.set, calls))
		})
	}

	require.True(t, sameModuleCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{rec("greet", src, "1.0.0"), root}))
	require.False(t, sameModuleCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{root, rec("greet", src+"x", "1.1.0")}))
	require.False(t, sameModuleCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{root}))
}

// TestInstallModulesNeverOlder: a snapshot holding an older version of a
// module the data dir has is not copied in when neverOlder is set (the
// data dir keeps its own, byte for byte), and is with neverOlder unset
// (Args.Upgrade: a fresh resolution, as terraform init -upgrade makes).
// A newer snapshot is copied in either way.
func TestInstallModulesNeverOlder(t *testing.T) {
	const src = "registry.tfisolate.test/tfisolate/greet/tfitest"
	snapshot := func(t *testing.T, ver string) modSnapshot {
		dir := filepath.Join(t.TempDir(), "modules")
		origin := filepath.Join("/leader", "data", "modules")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "greet"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "greet", "main.tf"), []byte("# "+ver+"\n"), 0o644))
		m := fmt.Sprintf(`{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"greet","Source":%q,"Version":%q,"Dir":%q}]}`,
			src, ver, filepath.ToSlash(filepath.Join(origin, "greet")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, manifestName), []byte(m), 0o644))
		return modSnapshot{Dir: dir, Origin: origin, Workdir: "/leader/work"}
	}
	calls := []modtree.Call{{Key: "greet", Source: src, Version: ">= 1.0.0"}}
	version := func(t *testing.T, dataDir string) string {
		return readFile(t, filepath.Join(dataDir, modulesDir, "greet", "main.tf"))
	}
	dataDir := t.TempDir()
	inst, err := installModules(snapshot(t, "1.1.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.True(t, inst.copied)
	require.Equal(t, "# 1.1.0\n", version(t, dataDir))
	before := readFile(t, filepath.Join(dataDir, modulesDir, manifestName))

	inst, err = installModules(snapshot(t, "1.0.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.False(t, inst.copied)
	require.Equal(t, []string{"module.greet " + src + ": 1.1.0, the set has 1.0.0"}, inst.older)
	require.Len(t, inst.have, 2)
	require.Equal(t, "# 1.1.0\n", version(t, dataDir), "the unit keeps its newer module")
	require.Equal(t, before, readFile(t, filepath.Join(dataDir, modulesDir, manifestName)))

	inst, err = installModules(snapshot(t, "1.2.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.True(t, inst.copied)
	require.Equal(t, "# 1.2.0\n", version(t, dataDir))

	inst, err = installModules(snapshot(t, "1.0.0"), dataDir, calls, false)
	require.NoError(t, err)
	require.True(t, inst.copied, "an upgrade's fresh resolution is installed as it is")
	require.Empty(t, inst.older)
	require.Equal(t, "# 1.0.0\n", version(t, dataDir))
}

func TestModuleKey(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		}
		return filepath.Join(dir, "c")
	}
	moduleKey := func(dir string) (string, bool) { return moduleKey(modtree.Walk(dir, modtree.TerraformFiles), nil) }
	nested := map[string]string{
		"c/main.tf": `module "net" { source = "../modules/net" }`,
		"modules/net/a.tf": `module "vpc" {
  source  = "example.test/acme/vpc/aws"
  version = "~> 1.0"
}`,
	}
	key, remote := moduleKey(write(t, nested))
	require.True(t, remote, "a remote call inside a local module counts")
	require.Equal(t, "net\t../modules/net\t\nnet.vpc\texample.test/acme/vpc/aws\t~> 1.0", key)

	again, _ := moduleKey(write(t, nested))
	require.Equal(t, key, again, "the same component elsewhere has the same key")

	moved := map[string]string{
		"c/main.tf":  `module "net" { source = "./net" }`,
		"c/net/a.tf": nested["modules/net/a.tf"],
	}
	other, remote := moduleKey(write(t, moved))
	require.True(t, remote)
	require.NotEqual(t, key, other, "another local layout is another key")

	_, remote = moduleKey(write(t, map[string]string{
		"c/main.tf":   `module "x" { source = "./x" }`,
		"c/x/main.tf": `output "o" { value = 1 }`,
	}))
	require.False(t, remote, "local modules only")

	_, remote = moduleKey(write(t, map[string]string{"c/main.tf": `module "self" { source = "./" }`}))
	require.False(t, remote, "a cycle ends the walk")
}
