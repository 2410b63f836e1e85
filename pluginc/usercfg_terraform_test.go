package pluginc

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testcliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// Scenarios with real terraform for the user's CLI config: credentials,
// hosts and mirrors that only the user's file knows.

// otherNamespace serves the test provider under a second address, one
// the cache never holds, so terraform itself must install it.
const otherNamespace = "othertest"

func otherSource() string { return testprovider.Host + "/" + otherNamespace + "/" + testprovider.Type }

// twoProviderModule requires the cached provider and, if withOther, the
// one only terraform installs.
func twoProviderModule(withCached, withOther bool) string {
	s := "terraform {\n  required_providers {\n"
	if withCached {
		s += "    tfitest = { source = \"" + testprovider.Source + "\" }\n"
	}
	if withOther {
		s += "    other = { source = \"" + otherSource() + "\" }\n"
	}
	return s + "  }\n}\n"
}

// runTerraform runs terraform and returns its combined output and error.
func runTerraform(t *testing.T, bin, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// initDir writes a module (and a lock file, if given) into a fresh dir.
func initDir(t *testing.T, module string, lock []byte) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(module), 0o644))
	if lock != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".terraform.lock.hcl"), lock, 0o644))
	}
	return dir
}

// writeMerged writes a merged CLI config and returns terraform's
// environment for it, trusting the loopback registry's CA.
func writeMerged(t *testing.T, srv *testregistry.Server, cfg []byte) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "merged.tfrc.json")
	require.NoError(t, os.WriteFile(p, cfg, 0o644))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, srv.WriteCAFile(ca))
	return append(testenv.TerraformEnv(p), "SSL_CERT_FILE="+ca)
}

// requireCacheLink checks that terraform linked the cached provider from
// the cache instead of installing it anew.
func requireCacheLink(t *testing.T, dir string, pkg Package) {
	t.Helper()
	link := filepath.Join(dir, ".terraform", "providers", testprovider.Source, pkg.Version, testprovider.Platform)
	target, err := filepath.EvalSymlinks(link)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(pkg.Dir)
	require.NoError(t, err)
	require.Equal(t, want, target, "terraform must use the cache's package")
}

// TestTerraformUserCredentials: a registry that answers only with its
// token, which only the user's CLI config (a credentials block) holds.
// The cache downloads with it; terraform, given CLIConfigFor(file), inits
// a directory whose lock file the cache wrote, and installs a provider
// the cache does not hold straight from that registry with the user's
// credentials and host block. Without the credentials the same install
// is refused; the user's plugin_cache_dir is never written.
func TestTerraformUserCredentials(t *testing.T) {
	tfBin := testenv.Terraform(t)
	const tok = "user-token-from-rc"
	f := startRegistry(t, 0, []string{"1.0.0"}, testregistry.WithToken(tok))
	require.NoError(t, f.srv.AddFile(otherNamespace, testprovider.Type, "1.0.0", testprovider.Platform, f.zips["1.0.0"]))
	pluginCache := t.TempDir()
	rcExtra := "plugin_cache_dir = \"" + filepath.ToSlash(pluginCache) + "\"\n"
	user, err := cliconfig.Read(tokenRegistryCLIFile(t, f.srv, tok, rcExtra))
	require.NoError(t, err)
	require.Equal(t, filepath.ToSlash(pluginCache), user.PluginCacheDir)

	c := f.open(t, t.TempDir(), WithCLIConfig(user), WithLookupEnv(func(string) (string, bool) { return "", false }))
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Constraints: ">= 1.0"})
	require.NoError(t, err)
	lock := LockFile(pkgs)
	env := writeMerged(t, f.srv, c.CLIConfigFor(user))

	// The cached provider: from the cache, lock file kept byte for byte.
	dir := initDir(t, twoProviderModule(true, false), lock)
	out, err := runTerraform(t, tfBin, dir, env, "init", "-input=false", "-no-color")
	require.NoError(t, err, out)
	got, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, string(lock), string(got))
	requireCacheLink(t, dir, pkgs[0])
	require.Equal(t, 1, f.srv.TotalDownloads(), "terraform downloaded nothing: the cache served it")

	// A provider the cache does not hold: terraform installs it directly
	// from the token-protected registry, with the user's credentials.
	dir = initDir(t, twoProviderModule(true, true), lock)
	out, err = runTerraform(t, tfBin, dir, env, "init", "-input=false", "-no-color")
	require.NoError(t, err, out)
	require.Equal(t, 1, f.srv.Downloads(otherNamespace+"/"+testprovider.Type+"/1.0.0/"+testprovider.Platform))
	requireCacheLink(t, dir, pkgs[0])
	got, err = os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Contains(t, string(got), `provider "`+otherSource()+`"`)
	ents, err := os.ReadDir(pluginCache)
	require.NoError(t, err)
	require.Empty(t, ents, "the user's plugin_cache_dir must not reach terraform")

	// The same file without its credentials block: refused by the registry.
	noCreds, err := cliconfig.Read(tokenRegistryCLIFile(t, f.srv, "", rcExtra))
	require.NoError(t, err)
	dir = initDir(t, twoProviderModule(true, true), lock)
	out, err = runTerraform(t, tfBin, dir, writeMerged(t, f.srv, c.CLIConfigFor(noCreds)), "init", "-input=false", "-no-color")
	require.Error(t, err, out)
	require.Contains(t, out, "requires authentication credentials", out)
	require.Equal(t, 1, f.srv.Downloads(otherNamespace+"/"+testprovider.Type+"/1.0.0/"+testprovider.Platform), "no second download")
}

// requestLog records the paths the loopback registry serves.
type requestLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *requestLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *requestLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *requestLog) WithGroup(string) slog.Handler            { return l }
func (l *requestLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "path" {
			l.mu.Lock()
			l.paths = append(l.paths, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// take returns the paths served since the last take.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.paths
	l.paths = nil
	return p
}

func countPrefix(paths []string, prefix string) int {
	n := 0
	for _, p := range paths {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// TestTerraformUserNetworkMirror: the user's provider_installation names
// a network mirror (and forbids going direct for the registry's host).
// A cache built from SourcesFrom(file) installs from the mirror, never
// touching the registry's API; terraform, given CLIConfigFor(file), takes
// the cached provider from the cache and a provider the cache lacks from
// the user's mirror, as the user's own terraform would.
func TestTerraformUserNetworkMirror(t *testing.T) {
	tfBin := testenv.Terraform(t)
	log := &requestLog{}
	// The registry API needs a token nobody has: using it would fail.
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"}, testregistry.WithToken("nobody-has-it"), testregistry.WithLogger(slog.New(log)))
	require.NoError(t, f.srv.AddFile(otherNamespace, testprovider.Type, "1.0.0", testprovider.Platform, f.zips["1.0.0"]))
	user, err := cliconfig.Read(testcliconfig.WriteFile(t, "corp.tfrc", `provider_installation {
  network_mirror {
    url     = "`+f.srv.LoopbackURL()+`"
    include = ["`+testprovider.Host+`/*/*"]
  }
  direct {
    exclude = ["`+testprovider.Host+`/*/*"]
  }
}
`))
	require.NoError(t, err)
	srcs, err := SourcesFrom(user)
	require.NoError(t, err)
	c, err := Open(t.TempDir(), WithSource(srcs...), WithHTTPClient(f.srv.HTTPClient()))
	require.NoError(t, err)
	log.take()
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Equal(t, "1.1.0", pkgs[0].Version)
	served := log.take()
	mirrorPath := "/" + testprovider.Host + "/" + testprovider.Namespace + "/" + testprovider.Type + "/"
	require.Equal(t, 2, countPrefix(served, mirrorPath), "index.json and 1.1.0.json: %v", served)
	require.Equal(t, 0, countPrefix(served, "/v1/")+countPrefix(served, "/.well-known/"), "the registry was not asked: %v", served)
	require.Equal(t, 1, f.srv.Downloads(f.key("1.1.0")))

	env := writeMerged(t, f.srv, c.CLIConfigFor(user))
	dir := initDir(t, twoProviderModule(true, true), LockFile(pkgs))
	out, err := runTerraform(t, tfBin, dir, env, "init", "-input=false", "-no-color")
	require.NoError(t, err, out)
	requireCacheLink(t, dir, pkgs[0])
	served = log.take()
	require.Equal(t, 0, countPrefix(served, mirrorPath), "the cached provider came from the cache: %v", served)
	require.Equal(t, 2, countPrefix(served, "/"+testprovider.Host+"/"+otherNamespace+"/"), "the other provider came from the user's mirror: %v", served)
	require.Equal(t, 0, countPrefix(served, "/v1/")+countPrefix(served, "/.well-known/"), "the registry was not asked: %v", served)
	require.Equal(t, 1, f.srv.Downloads(otherNamespace+"/"+testprovider.Type+"/1.0.0/"+testprovider.Platform))
}
