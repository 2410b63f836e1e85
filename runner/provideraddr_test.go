package runner

// Provider source addresses whose namespace holds an underscore
// (registry.example.test/my_org/tfitest), which Terraform 1.16 accepts
// and OpenTofu and older Terraform refuse: the runner does what each
// plain engine does with them, from a filesystem mirror and from a
// network mirror (pluginc's MirrorHandler).

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/providerreqs"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// nsHost is the private registry host of the underscore scenarios.
const nsHost = "registry.example.test"

// nsComponent requires the test provider at nsHost/ns/tfitest.
func nsComponent(ns string) string {
	return `terraform {
  required_providers {
    tfitest = {
      source  = "` + nsHost + `/` + ns + `/` + testprovider.Type + `"
      version = "` + providerVersion + `"
    }
  }
}
resource "tfitest_item" "this" { name = "ns-` + ns + `" }
output "id" { value = tfitest_item.this.id }
`
}

// nsMirror is one way to serve the provider under every namespace of a
// scenario: to plain terraform through its CLI config (and env), to the
// runner's cache as a pluginc source.
type nsMirror struct {
	cliConfig string   // provider_installation for plain terraform
	env       []string // what plain terraform needs besides it
	opts      []pluginc.Option
}

// newNSMirrors serves the test provider at nsHost under each of
// namespaces from a packed filesystem mirror and from a MirrorHandler
// over loopback HTTPS whose own cache reads that filesystem mirror.
func newNSMirrors(t *testing.T, namespaces ...string) map[string]nsMirror {
	t.Helper()
	bin := testprovider.Build(t)
	fsDir := t.TempDir()
	for _, ns := range namespaces {
		testprovider.WriteFilesystemMirrorAs(t, fsDir, nsHost, ns, bin, providerVersion)
	}
	upstream, err := pluginc.Open(t.TempDir(), pluginc.WithSource(pluginc.FilesystemMirror(fsDir)))
	require.NoError(t, err)
	srv := httptest.NewTLSServer(upstream.MirrorHandler())
	t.Cleanup(srv.Close)
	cert := filepath.Join(t.TempDir(), "mirror.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	return map[string]nsMirror{
		"filesystem": {
			cliConfig: fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", fsDir),
			opts:      []pluginc.Option{pluginc.WithSource(pluginc.FilesystemMirror(fsDir))},
		},
		"network": {
			cliConfig: fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", srv.URL+"/"),
			env:       []string{"SSL_CERT_FILE=" + cert},
			opts:      []pluginc.Option{pluginc.WithSource(pluginc.NetworkMirror(srv.URL + "/")), pluginc.WithHTTPClient(srv.Client())},
		},
	}
}

// TestProviderNamespaceUnderscoreLikePlainEngine: a component requiring
// registry.example.test/my_org/tfitest, applied by plain terraform and by
// the runner on the same root, under every engine of the matrix and
// Terraform 1.15.0, from a filesystem mirror and from a network mirror
// (MirrorHandler): where the plain engine applies it (Terraform 1.16) the
// runner does too, with the same resources, outputs and lock file entry;
// where the plain engine refuses the address (OpenTofu, Terraform 1.11
// and 1.15) the runner refuses it before init, naming it. A leading or
// trailing underscore (_org, org_) is refused by every engine, and by
// the runner alike.
func TestProviderNamespaceUnderscoreLikePlainEngine(t *testing.T) {
	t.Parallel()
	namespaces := []string{"my_org", "_org", "org_"}
	run := func(t *testing.T, e testenv.Engine) {
		mirrors := newNSMirrors(t, namespaces...)
		for _, via := range []string{"filesystem", "network"} {
			m := mirrors[via]
			for _, ns := range namespaces {
				t.Run(via+"/"+ns, func(t *testing.T) {
					addr := nsHost + "/" + ns + "/" + testprovider.Type
					src := filepath.Join(t.TempDir(), "components", "app")
					writeTree(t, src, map[string]string{"main.tf": nsComponent(ns)})
					dir := t.TempDir()

					// Plain engine, in a copy of the component.
					plain := copyOf(t, src)
					cli := filepath.Join(dir, "plain.tfrc")
					require.NoError(t, os.WriteFile(cli, []byte(m.cliConfig), 0o644))
					env := append(append(testenv.TerraformEnv(cli), m.env...), "TF_DATA_DIR="+filepath.Join(plain, ".plain-data"))
					initOut, initErr := runEngine(testCtx(t), e.Path, plain, env, "init", "-input=false", "-no-color")

					// The runner, on the same component.
					cache, err := pluginc.Open(filepath.Join(dir, "cache"), m.opts...)
					require.NoError(t, err)
					wd, err := workdir.New(filepath.Join(dir, "workdirs"))
					require.NoError(t, err)
					r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(e.Path))
					require.NoError(t, err)
					state := filepath.Join(dir, "runner.tfstate")
					u := Unit{Workdir: workdirSpec("plat-ue2-dev", "app", src, files(t, map[string]any{}, state))}
					rep, runErr := r.Run(testCtx(t), Apply, u)

					// What the engines' sources say, checked against the
					// plain engine itself before anything is compared.
					accepts := ns == "my_org" && e.Name == testenv.Terraform116.Name()
					require.Equal(t, accepts, initErr == nil, "plain %s init of %s:\n%s", e.Name, addr, initOut)
					if initErr != nil {
						t.Logf("plain %s refuses %s:\n%s", e.Name, addr, initOut)
						require.Contains(t, initOut, "Invalid provider namespace", "plain %s refuses the address by its namespace", e.Name)
						require.Error(t, runErr, "plain %s refuses %s, so must the runner:\n%s", e.Name, addr, initOut)
						require.ErrorIs(t, runErr, pluginc.ErrInvalidProvider)
						require.ErrorContains(t, runErr, `"`+addr+`"`, "the runner's refusal names the address")
						require.NotEqual(t, Succeeded, rep.Results[0].Status)
						require.Zero(t, cache.Stats().Downloads, "nothing installed for an address the engine refuses")
						return
					}
					require.NoError(t, runErr, "plain %s accepts %s, so must the runner", e.Name, addr)
					res := rep.Results[0]
					require.Equal(t, Succeeded, res.Status, "%v", res.Err)

					out, err := runEngine(testCtx(t), e.Path, plain, env, "apply", "-auto-approve", "-input=false", "-no-color")
					require.NoError(t, err, "plain %s apply:\n%s", e.Name, out)
					require.Equal(t, stateResources(t, filepath.Join(plain, "terraform.tfstate")), stateResources(t, state),
						"the runner's resources and plain %s's", e.Name)
					out, err = runEngine(testCtx(t), e.Path, plain, env, "output", "-json", "-no-color")
					require.NoError(t, err, "plain %s output:\n%s", e.Name, out)
					var plainOut map[string]struct{ Value json.RawMessage }
					require.NoError(t, json.Unmarshal([]byte(out), &plainOut), out)
					require.Len(t, res.Outputs, len(plainOut))
					for k, v := range plainOut {
						require.JSONEq(t, string(v.Value), string(res.Outputs[k].Value), "output %s", k)
					}

					plainLocks, err := pluginc.ParseLockFile([]byte(readFile(t, filepath.Join(plain, lockFileName))))
					require.NoError(t, err)
					runnerLock := unitLockFile(t, wd, u.Workdir.Stack, u.Workdir.Instance)
					runnerLocks, err := pluginc.ParseLockFile(runnerLock)
					require.NoError(t, err, "%s", runnerLock)
					require.Equal(t, plainLocks, runnerLocks, "the runner's lock file entry and plain %s's", e.Name)
					require.Equal(t, addr, runnerLocks[0].Provider.String())
				})
			}
		}
	}
	testenv.Engines(t, run)
	t.Run(testenv.Terraform115.Name(), func(t *testing.T) { run(t, testenv.Terraform115.Engine(t)) })
}

// TestProviderAddressGrammarLikeEngines: the grammar the runner parses a
// configuration's provider addresses by (providerreqs.GrammarOf of the
// detected engine) refuses exactly the addresses the plain engine
// refuses, under every engine of the matrix and Terraform 1.15.0. One
// root requires a provider per namespace; plain init reports every
// address it refuses at the line that names it, before installing
// anything, and the grammar must refuse those lines' addresses and no
// others.
func TestProviderAddressGrammarLikeEngines(t *testing.T) {
	t.Parallel()
	namespaces := []string{"my-org", "myorg", "my_org", "a_b_c", "a_b-c", "my__org", "o1_2", "x_1",
		"My_Org", "MyOrg", "_org", "org_", "_", "-org", "org-", "my.org", "my!org", "\u00e9_org"}
	var main strings.Builder
	main.WriteString("terraform {\n  required_providers {\n")
	lineOf := map[int]string{} // line of main.tf -> the address it names
	for i, ns := range namespaces {
		addr := nsHost + "/" + ns + "/" + testprovider.Type
		lineOf[3+i] = addr
		fmt.Fprintf(&main, "    p%d = { source = %q }\n", i, addr)
	}
	main.WriteString("  }\n}\n")
	run := func(t *testing.T, e testenv.Engine) {
		info, err := engine.Detect(testCtx(t), e.Path)
		require.NoError(t, err)
		g := providerreqs.GrammarOf(info)
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": main.String()})
		cli := filepath.Join(t.TempDir(), "empty-mirror.tfrc")
		require.NoError(t, os.WriteFile(cli, fmt.Appendf(nil, "provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", t.TempDir()), 0o644))
		out, err := runEngine(testCtx(t), e.Path, dir, append(testenv.TerraformEnv(cli), "TF_DATA_DIR="+filepath.Join(dir, ".data")),
			"init", "-backend=false", "-input=false", "-no-color")
		require.Error(t, err, "nothing can be installed from an empty mirror:\n%s", out)
		engineRefuses := map[string]bool{}
		for _, m := range regexp.MustCompile(`on main\.tf line (\d+)`).FindAllStringSubmatch(out, -1) {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			require.Contains(t, lineOf, n, "plain %s refuses line %d, which names no provider:\n%s", e.Name, n, out)
			engineRefuses[lineOf[n]] = true
		}
		for _, addr := range lineOf {
			_, perr := g.Parse(addr)
			require.Equal(t, engineRefuses[addr], perr != nil, "%s under plain %s (%v): engine refuses %v, the grammar's error: %v\n%s",
				addr, e.Name, g, engineRefuses[addr], perr, out)
		}
		t.Logf("%s (%v) refuses %d of %d addresses", e.Name, g, len(engineRefuses), len(lineOf))
	}
	testenv.Engines(t, run)
	t.Run(testenv.Terraform115.Name(), func(t *testing.T) { run(t, testenv.Terraform115.Engine(t)) })
}
