package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

const providerVersion = "1.0.0"

// world is a real setup: terraform, the test provider served by a loopback
// registry, an empty plugin cache and a workdir root.
type world struct {
	tf    string
	dir   string
	reg   *testregistry.Server
	pkg   testregistry.Package
	cache *pluginc.Cache
	wd    *workdir.Manager
}

func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldWith(t, testprovider.Build(t))
}

// newWorldWith is newWorld with the registry serving bin, a build of the
// test provider.
func newWorldWith(t testing.TB, bin *testprovider.Binary) *world {
	t.Helper()
	w := &world{tf: testenv.Terraform(t), dir: t.TempDir()}
	zip, err := os.ReadFile(bin.Zip(t, providerVersion))
	require.NoError(t, err)
	w.reg = testregistry.Start(t)
	w.pkg = testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type,
		Version: providerVersion, Platform: testprovider.Platform, Zip: zip}
	w.reg.MustAdd(t, w.pkg)
	w.cache, err = pluginc.Open(filepath.Join(w.dir, "cache"),
		pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(w.reg.HTTPClient()))
	require.NoError(t, err)
	w.wd, err = workdir.New(filepath.Join(w.dir, "workdirs"))
	require.NoError(t, err)
	return w
}

func (w *world) runner(t testing.TB, opts ...Option) *Runner {
	t.Helper()
	r, err := New(append([]Option{WithWorkdirs(w.wd), WithPluginCache(w.cache), WithTerraform(w.tf)}, opts...)...)
	require.NoError(t, err)
	return r
}

// component writes a root module into a new directory and returns it.
func (w *world) component(t testing.TB, name, mainTF string) string {
	t.Helper()
	dir := filepath.Join(w.dir, "components", name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF), 0o644))
	return dir
}

// itemComponent manages one tfitest_item named after var.name.
const itemComponent = `
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

// files returns generated files: tfvars and a local backend whose state
// lives at statePath, where the test can read it.
func files(t testing.TB, vars map[string]any, statePath string) map[string][]byte {
	t.Helper()
	v, err := json.Marshal(vars)
	require.NoError(t, err)
	b, err := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{"local": map[string]any{"path": statePath}}}})
	require.NoError(t, err)
	return map[string][]byte{"terraform.tfvars.json": v, "backend.tf.json": b}
}

// stateResources returns type.name -> attributes of every resource
// instance in a local state file.
func stateResources(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var st struct {
		Resources []struct {
			Type, Name string
			Instances  []struct {
				Attributes map[string]any
			}
		}
	}
	require.NoError(t, json.Unmarshal(b, &st))
	out := map[string]map[string]any{}
	for _, r := range st.Resources {
		for _, in := range r.Instances {
			out[r.Type+"."+r.Name] = in.Attributes
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func workdirSpec(stack, instance, src string, files map[string][]byte) workdir.Spec {
	return workdir.Spec{Stack: stack, Instance: instance, Source: src, Files: files}
}

// TestDocsListAddedEnvironment: docs/engines.md's "Added:" entry of the
// engine environment names every variable the SDK adds to a unit's environment
// that neither the host's environment nor the unit's Env set: those of
// unitEnv, TMPDIR (engineEnv) and GOMAXPROCS (internal/tfcmd).
func TestDocsListAddedEnvironment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "engines.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\n- Added: (.*?)\n(?:- |\n)`).FindSubmatch(b)
	require.NotNil(t, m, "docs/engines.md has an \"- Added:\" entry")
	added := strings.Join(strings.Fields(string(m[1])), " ")
	want := []string{"TMPDIR", "GOMAXPROCS"}
	for k := range unitEnv(nil, nil, "", nil) {
		want = append(want, k)
	}
	for _, k := range want {
		require.Contains(t, added, "`"+k+"`", "docs/engines.md's Added entry names %s", k)
	}
}
