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
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
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
