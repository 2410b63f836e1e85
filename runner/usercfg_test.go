package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// cfgComponent needs the test provider and shows, through a provisioner,
// the CLI config terraform was given.
const cfgComponent = `
terraform {
  required_providers {
    tfitest = { source = "` + testprovider.Source + `" }
  }
}
variable "out" { type = string }
resource "tfitest_item" "this" {
  name = "x"
  provisioner "local-exec" { command = "cat \"$TF_CLI_CONFIG_FILE\" > ${var.out}" }
}
`

// TestUserCLIConfigCredentials: a registry that requires a token, which
// only the user's CLI config carries (a credentials block), serves the
// runner's units: the cache takes the token from the same file the
// runner finds for terraform, and terraform's own CLI config keeps the
// user's credentials beside the cache. Without the file, nothing works.
func TestUserCLIConfigCredentials(t *testing.T) {
	const token = "s3cret-token"
	reg := testregistry.Start(t, testregistry.WithToken(token))
	bin := testprovider.Build(t)
	zip, err := os.ReadFile(bin.Zip(t, providerVersion))
	require.NoError(t, err)
	reg.MustAdd(t, testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type,
		Version: providerVersion, Platform: testprovider.Platform, Zip: zip})
	dir := t.TempDir()
	userCfg := filepath.Join(dir, "user.tfrc")
	require.NoError(t, os.WriteFile(userCfg, []byte(fmt.Sprintf(`
credentials %q {
  token = %q
}
`, reg.Host(), token)), 0o644))
	src := filepath.Join(dir, "component")
	writeTestFile(t, filepath.Join(src, "main.tf"), cfgComponent)
	wds, err := workdir.New(filepath.Join(dir, "workdirs"))
	require.NoError(t, err)

	run := func(t *testing.T, env map[string]string, name string) (*Report, error) {
		user, err := cliconfig.Find("terraform", "", func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			return "", false
		})
		require.NoError(t, err)
		cache, err := pluginc.Open(filepath.Join(dir, "cache-"+name), pluginc.WithHTTPClient(reg.HTTPClient()),
			pluginc.WithCLIConfig(user), pluginc.WithLookupEnv(func(string) (string, bool) { return "", false }))
		require.NoError(t, err)
		r, err := New(WithWorkdirs(wds), WithPluginCache(cache), WithTerraform(testenv.Terraform(t)), WithRetry(RetryPolicy{}))
		require.NoError(t, err)
		out := filepath.Join(dir, name+".cliconfig")
		return r.Run(testCtx(t), Apply, Unit{Env: env, Workdir: workdirSpec("plat-ue2-dev", name, src,
			map[string][]byte{"terraform.tfvars.json": []byte(`{"out": "` + out + `"}`)})})
	}

	_, err = run(t, map[string]string{"TF_CLI_CONFIG_FILE": filepath.Join(dir, "none.tfrc")}, "without")
	require.Error(t, err, "no token, no provider")

	rep, err := run(t, map[string]string{"TF_CLI_CONFIG_FILE": userCfg}, "with")
	require.NoError(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status)
	given, err := os.ReadFile(filepath.Join(dir, "with.cliconfig"))
	require.NoError(t, err)
	require.Contains(t, string(given), token, "terraform's CLI config keeps the user's credentials")
	require.Contains(t, string(given), "filesystem_mirror", "and has the cache as its provider installation")
	require.NotEqual(t, userCfg, strings.TrimSpace(string(given)))
}

// TestUserCLIConfigMirror: a network mirror that the user's
// provider_installation requires (and going direct is excluded for its
// host) becomes the cache's source when the caller asks for it (the
// cache's only source is then that mirror): the runner's units get the
// provider from it, downloaded once.
func TestUserCLIConfigMirror(t *testing.T) {
	w := newWorld(t)
	userCfg := filepath.Join(w.dir, "user.tfrc")
	require.NoError(t, os.WriteFile(userCfg, []byte(fmt.Sprintf(`
provider_installation {
  network_mirror {
    url = %q
  }
}
`, w.reg.MirrorURL())), 0o644))
	user, err := cliconfig.Read(userCfg)
	require.NoError(t, err)
	srcs, err := pluginc.SourcesFrom(user)
	require.NoError(t, err)
	cache, err := pluginc.Open(filepath.Join(w.dir, "mirror-cache"), pluginc.WithHTTPClient(w.reg.HTTPClient()), pluginc.WithSource(srcs...))
	require.NoError(t, err)
	r, err := New(WithWorkdirs(w.wd), WithPluginCache(cache), WithTerraform(w.tf))
	require.NoError(t, err)
	src := w.component(t, "mirrored", itemComponent)
	var units []Unit
	for i := range 3 {
		inst := fmt.Sprintf("m-%d", i)
		units = append(units, Unit{Env: map[string]string{"TF_CLI_CONFIG_FILE": userCfg},
			Workdir: workdirSpec("plat-ue2-dev", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate")))})
	}
	before := w.reg.Requests()
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Count(Succeeded))
	require.Equal(t, int64(1), cache.Stats().Downloads)
	require.Equal(t, 1, w.reg.Downloads(w.pkg.Key()), "one download, from the mirror")
	require.Positive(t, w.reg.Requests()-before)
}

// TestUserCLIConfigBrokenIsAWarning: a CLI config terraform would only
// warn about (a syntax error, an unknown provider_installation method, a
// directory named by TF_CLI_CONFIG_FILE) fails no unit: the Run says so
// once and applies every unit, as plain terraform runs on.
func TestUserCLIConfigBrokenIsAWarning(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "item", itemComponent)
	syntax := filepath.Join(w.dir, "syntax.tfrc")
	require.NoError(t, os.WriteFile(syntax, []byte(`credentials "x" {`), 0o644))
	method := filepath.Join(w.dir, "method.tfrc")
	require.NoError(t, os.WriteFile(method, []byte(`provider_installation { carrier_pigeon {} }`), 0o644))
	for n, cfg := range []string{syntax, method, t.TempDir()} {
		out := &syncBuffer{}
		r := w.runner(t, WithOutput(out))
		var units []Unit
		for i := range 2 {
			inst := fmt.Sprintf("w-%d-%d", n, i)
			units = append(units, Unit{Env: map[string]string{"TF_CLI_CONFIG_FILE": cfg},
				Workdir: workdirSpec("plat-ue2-dev", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(t.TempDir(), inst+".tfstate")))})
		}
		rep, err := r.Run(testCtx(t), Apply, units...)
		require.NoError(t, err, cfg)
		require.Equal(t, 2, rep.Count(Succeeded))
		require.Equal(t, 1, strings.Count(out.String(), "your CLI config:"), "one warning per Run:\n%s", out.String())
		require.Contains(t, out.String(), cfg)
	}
}
