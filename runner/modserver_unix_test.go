//go:build unix

package runner

// A fleet of machines behind one module server (issue 42 item 1), all
// real processes: a module server process and runner processes, each
// with its own workdir root and module store, applying instances of a
// component that calls a registry module. The children are in
// modserver_child_test.go.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// modFleet is the loopback registry publishing tfisolate/greet/tfitest
// 1.0.0, a module server process in front of it, and what every machine
// is given: a CLI config reaching the registry (for a fallback), one
// file of the CAs it trusts (the registry's and the server's), and the
// server's token as TF_TOKEN_<server host>.
type modFleet struct {
	tf     string
	dir    string
	reg    *testregistry.Server
	git    *testregistry.GitServer
	server *childproc.Proc
	url    string
	env    map[string]string
}

const modFleetToken = "fleet-module-token"

func startModFleet(t *testing.T, tf string) *modFleet {
	t.Helper()
	f := &modFleet{tf: tf, dir: t.TempDir(), reg: testregistry.Start(t)}
	require.NoError(t, f.reg.AddModule("tfisolate", "greet", "tfitest", "1.0.0", map[string]string{
		"main.tf": `output "version" { value = "1.0.0" }` + "\n",
	}))
	f.git = testregistry.StartGit(t, filepath.Join(f.dir, "git"))
	require.NoError(t, f.git.AddRepo("hello", []string{"v1.0.0"}, map[string]map[string]string{
		"v1.0.0": {"main.tf": `output "greeting" { value = "hello 1.0.0" }` + "\n"}}))
	gitCA := filepath.Join(f.dir, "git-ca.pem")
	require.NoError(t, f.git.WriteCAFile(gitCA))
	t.Setenv("GIT_SSL_CAINFO", gitCA) // the server process's clone (httptest's certificate: the server's too)
	reg := fleetRegistry{Host: f.reg.Host(), Addr: f.reg.Addr(), CAFile: filepath.Join(f.dir, "registry-ca.pem")}
	require.NoError(t, f.reg.WriteCAFile(reg.CAFile))
	cert := filepath.Join(f.dir, "server.pem")
	cfg, err := json.Marshal(modServerConfig{Registry: reg, Store: filepath.Join(f.dir, "server-store"), CertFile: cert, Token: modFleetToken})
	require.NoError(t, err)
	f.server = childproc.Start(t, modServerRole, childproc.WithEnv(childConfigEnv+"="+string(cfg)), childproc.WithTimeout(childTimeout))
	line := f.server.Next(t)
	u, ok := strings.CutPrefix(line, modServerURLPrefix)
	require.True(t, ok, "the server said %q", line)
	f.url = u
	ca, err := os.ReadFile(reg.CAFile)
	require.NoError(t, err)
	sc, err := os.ReadFile(cert)
	require.NoError(t, err)
	bundle := filepath.Join(f.dir, "cas.pem")
	require.NoError(t, os.WriteFile(bundle, append(ca, sc...), 0o644))
	user := filepath.Join(f.dir, "user.tfrc")
	require.NoError(t, os.WriteFile(user, []byte(f.reg.ModuleServices()), 0o644))
	f.env = map[string]string{"TF_CLI_CONFIG_FILE": user, "SSL_CERT_FILE": bundle, "GIT_SSL_CAINFO": gitCA, "TF_TOKEN_127_0_0_1": modFleetToken}
	return f
}

// machine starts a runner process named name with a workdir root, module
// store and checkout of its own, applying instances instances of the
// greeter component at once when its stdin closes.
func (f *modFleet) machine(t *testing.T, name string, instances int) *childproc.Proc {
	t.Helper()
	dir := filepath.Join(f.dir, name)
	src := filepath.Join(dir, "src", "greeter")
	testenv.WriteTree(t, src, map[string]string{"main.tf": `module "greet" {
  source  = "` + f.reg.ModuleSource("tfisolate", "greet", "tfitest") + `"
  version = "~> 1.0"
}
output "version" { value = module.greet.version }
module "hello" { source = "` + f.git.Source("hello", "v1.0.0") + `" }
output "greeting" { value = module.hello.greeting }
`})
	cfg := modRunnerConfig{TF: f.tf, Root: filepath.Join(dir, "workdirs"), Store: filepath.Join(dir, "modules"), Server: f.url, Env: f.env}
	for i := range instances {
		inst := fmt.Sprintf("greet%02d", i)
		cfg.Units = append(cfg.Units, workdirSpec("plat-ue2-dev", "greeter/"+inst, src,
			files(t, map[string]any{}, filepath.Join(dir, "states", inst+".tfstate"))))
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	return childproc.Start(t, modRunnerRole, childproc.WithEnv(childConfigEnv+"="+string(b)), childproc.WithTimeout(childTimeout))
}

// modResult waits for a machine to exit 0 and returns what it reported.
func modResult(t *testing.T, p *childproc.Proc) modRunnerResult {
	t.Helper()
	require.NoError(t, p.Wait(), p.Output())
	var r modRunnerResult
	lastResult(t, p.Output(), modRunnerResultPrefix, &r)
	return r
}

// TestModuleServerFleet (issue 42 item 1): three runner processes, each a
// machine with its own workdir root and module store, apply three
// instances each of a component calling a registry module and a git
// module, at once from a cold start, through one module server process:
// every instance applies both, the registry counts one download of the
// registry module for the whole fleet and the git server one clone, with
// no fallback. Then the server goes down: two more
// machines each apply from the registry and say so, naming the server, in
// Report.Warnings and a module-fallback event. Under every engine of the
// matrix.
func TestModuleServerFleet(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		const machines, instances = 3, 3
		f := startModFleet(t, e.Path)
		downloads := func() int {
			return f.reg.ModuleDownloads(testregistry.ModuleKey("tfisolate", "greet", "tfitest", "1.0.0"))
		}
		var ps []*childproc.Proc
		for i := range machines {
			ps = append(ps, f.machine(t, fmt.Sprintf("machine%d", i), instances))
		}
		for _, p := range ps {
			require.NoError(t, p.Stdin.Close())
		}
		for i, p := range ps {
			res := modResult(t, p)
			require.Empty(t, res.Errs, "machine %d", i)
			require.Equal(t, instances, res.Succeeded, "machine %d", i)
			require.Equal(t, []string{"1.0.0", "1.0.0", "1.0.0"}, res.Versions)
			require.Equal(t, []string{"hello 1.0.0", "hello 1.0.0", "hello 1.0.0"}, res.Greetings)
			require.Empty(t, res.Warnings, "machine %d", i)
			require.Empty(t, res.Fallbacks, "machine %d", i)
		}
		require.Equal(t, 1, downloads(), "one upstream download for the fleet")
		require.Equal(t, 1, f.git.Fetches("hello"), "one upstream clone for the fleet")

		require.NoError(t, f.server.Stdin.Close())
		require.NoError(t, f.server.Wait(), f.server.Output())
		ps = nil
		for i := range 2 {
			ps = append(ps, f.machine(t, fmt.Sprintf("late%d", i), 1))
		}
		for _, p := range ps {
			require.NoError(t, p.Stdin.Close())
		}
		for i, p := range ps {
			res := modResult(t, p)
			require.Empty(t, res.Errs, "late machine %d", i)
			require.Equal(t, []string{"1.0.0"}, res.Versions)
			require.Equal(t, []string{"hello 1.0.0"}, res.Greetings)
			require.Len(t, res.Warnings, 1, "late machine %d: %v", i, res.Warnings)
			require.Contains(t, res.Warnings[0], "module server "+f.url+" failed")
			require.Contains(t, res.Warnings[0], "fetched from the modules' own sources")
			require.NotContains(t, res.Warnings[0], modFleetToken)
			require.Len(t, res.Fallbacks, 1, "late machine %d", i)
		}
		require.Equal(t, 3, downloads(), "each machine without its server fetched from the registry")
		require.Equal(t, 3, f.git.Fetches("hello"), "and cloned from the git server")
	})
}
