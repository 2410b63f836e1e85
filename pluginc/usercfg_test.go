package pluginc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testcliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

func TestProviderPatterns(t *testing.T) {
	p := func(s string) Provider {
		t.Helper()
		prov, err := ParseProvider(s)
		require.NoError(t, err)
		return prov
	}
	for _, tc := range []struct {
		pattern string
		match   []Provider
		miss    []Provider
	}{
		{testcliconfig.PublicHost + "/hashicorp/*", []Provider{p("hashicorp/aws"), p("hashicorp/null")}, []Provider{p("acme/aws"), p("corp.example/hashicorp/aws")}},
		{"hashicorp/aws", []Provider{p("hashicorp/aws"), p("aws"), p("HashiCorp/AWS")}, []Provider{p("hashicorp/null"), p("corp.example/hashicorp/aws")}},
		{"corp.example/*/*", []Provider{p("corp.example/a/b"), p("CORP.example/x/y")}, []Provider{p("hashicorp/aws"), p("other.example/a/b")}},
		{"corp.example:8443/acme/*", []Provider{p("corp.example:8443/acme/b")}, []Provider{p("corp.example/acme/b")}},
		{"*/*/*", []Provider{p("hashicorp/aws"), p("corp.example/a/b")}, nil},
		{"Corp.Example/ACME/Widget", []Provider{p("corp.example/acme/widget")}, []Provider{p("corp.example/acme/gadget")}},
		// Terraform 1.16's namespaces with an underscore.
		{"corp.example/my_org/*", []Provider{p("corp.example/my_org/b"), p("corp.example/My_Org/c")}, []Provider{p("corp.example/my-org/b"), p("corp.example/myorg/b")}},
	} {
		pp, err := cliconfig.ParsePattern(tc.pattern, "")
		require.NoError(t, err, tc.pattern)
		for _, m := range tc.match {
			require.True(t, pp.Matches(m.Hostname, m.Namespace, m.Type), "%s should match %s", tc.pattern, m)
		}
		for _, m := range tc.miss {
			require.False(t, pp.Matches(m.Hostname, m.Namespace, m.Type), "%s should not match %s", tc.pattern, m)
		}
	}

	// Two-part patterns name the engine's default host.
	pp, err := cliconfig.ParsePattern("hashicorp/aws", "tofu-registry.example")
	require.NoError(t, err)
	require.True(t, pp.Matches("tofu-registry.example", "hashicorp", "aws"))
	require.False(t, pp.Matches(p("hashicorp/aws").Hostname, "hashicorp", "aws"))

	for _, bad := range []string{"", "a", "a/b/c/d", "*/a/b", "h.example/*/b", "h.example/a b/c", "bad host!/a/b", "a/-b",
		"h.example/_org/b", "h.example/org_/b", "h.example/a/b_c"} {
		_, err := cliconfig.ParsePattern(bad, "")
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
	}
}

// TestFilteredSource: include and exclude decide what a method's source
// offers, exclusion first, as in Terraform.
func TestFilteredSource(t *testing.T) {
	bin := testprovider.Build(t)
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, bin, "1.0.0")
	prov := testProvider(t)
	for _, tc := range []struct {
		name             string
		include, exclude []string
		offered          bool
	}{
		{"no patterns", nil, nil, true},
		{"included", []string{testprovider.Host + "/*/*"}, nil, true},
		{"not included", []string{testcliconfig.PublicHost + "/hashicorp/*"}, nil, false},
		{"excluded", nil, []string{testprovider.Source}, false},
		{"exclusion wins", []string{testprovider.Host + "/*/*"}, []string{testprovider.Host + "/" + testprovider.Namespace + "/*"}, false},
		{"other excluded", nil, []string{"hashicorp/*"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &cliconfig.File{Path: "rc", ProviderInstallation: &cliconfig.ProviderInstallation{Methods: []cliconfig.InstallMethod{
				{Kind: "filesystem_mirror", Location: mirror, Include: tc.include, Exclude: tc.exclude},
			}}}
			srcs, err := SourcesFrom(f)
			require.NoError(t, err)
			require.Len(t, srcs, 1)
			vs, err := srcs[0].Versions(context.Background(), prov)
			require.NoError(t, err)
			c, err := Open(t.TempDir(), WithSource(srcs...))
			require.NoError(t, err)
			_, err = c.Ensure(context.Background(), Requirement{Provider: prov})
			if tc.offered {
				require.Len(t, vs, 1)
				require.NoError(t, err)
				return
			}
			require.Empty(t, vs)
			require.ErrorIs(t, err, ErrNotFound)
			require.Contains(t, err.Error(), "filesystem mirror "+mirror+" (")
		})
	}
}

func TestCLIConfigSources(t *testing.T) {
	abs := t.TempDir()
	f, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc", `provider_installation {
  network_mirror {
    url = "https://mirror.corp.example/providers/"
  }
  filesystem_mirror {
    path    = "`+filepath.ToSlash(abs)+`"
    include = ["corp.example/*/*"]
  }
  direct {
  }
}
`))
	require.NoError(t, err)
	srcs, err := SourcesFrom(f)
	require.NoError(t, err)
	var names []string
	for _, s := range srcs {
		names = append(names, s.String())
	}
	require.Equal(t, []string{
		"network mirror https://mirror.corp.example/providers/",
		"filesystem mirror " + filepath.ToSlash(abs) + " (include corp.example/*/*)",
		"provider registry",
	}, names)

	// No provider_installation: Terraform installs directly.
	f, err = cliconfig.Read(testcliconfig.WriteFile(t, "rc", "disable_checkpoint = true\n"))
	require.NoError(t, err)
	srcs, err = SourcesFrom(f)
	require.NoError(t, err)
	require.Len(t, srcs, 1)
	require.Equal(t, "provider registry", srcs[0].String())

	for _, tc := range []struct {
		name, src, msg string
		line           int
	}{
		{"no method", "provider_installation {\n  dev_overrides {\n    \"a/b\" = \"/x\"\n  }\n}\n", "no installation method", 1},
		{"plain http", "\nprovider_installation {\n  network_mirror {\n    url = \"http://mirror.example/\"\n  }\n}\n", "not an absolute https URL", 3},
		{"relative path", "provider_installation {\n  direct {}\n  filesystem_mirror {\n    path = \"providers\"\n  }\n}\n", "is relative", 3},
		{"oci mirror", "provider_installation {\n  oci_mirror {\n    repository_template = \"r.example/${namespace}/${type}\"\n  }\n}\n", "cannot install providers from an oci_mirror", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testcliconfig.WriteFile(t, "rc", tc.src)
			f, err := cliconfig.Read(path)
			require.NoError(t, err, "Terraform (or OpenTofu) reads it; only the cache cannot use it")
			srcs, err := SourcesFrom(f)
			require.Nil(t, srcs)
			require.ErrorIs(t, err, ErrInvalidCLIConfig)
			var ce *cliconfig.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, path, ce.Path)
			require.Equal(t, tc.line, ce.Line, err.Error())
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// fakeCachedProvider makes the cache hold a package dir for p, which is
// all CLIConfig looks at.
func fakeCachedProvider(t *testing.T, c *Cache, p Provider) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(c.PackagesDir(), p.Hostname, p.Namespace, p.Type, "1.0.0", "linux_amd64"), 0o755))
}

func TestCLIConfigFor(t *testing.T) {
	// A cache path HCL 1's quoted strings could not carry.
	c, err := Open(filepath.Join(t.TempDir(), `odd ${x} "q" \ dir`), WithSource(FilesystemMirror(t.TempDir())))
	require.NoError(t, err)
	require.Equal(t, c.CLIConfig(), c.CLIConfigFor(nil), "no user file: exactly CLIConfig")
	cached := Provider{Hostname: "corp.example", Namespace: "acme", Type: "widget"}
	fakeCachedProvider(t, c, cached)

	for _, tc := range []struct{ name, file, src string }{
		{"hcl", "rc", testcliconfig.EveryBlockHCL},
		{"json", "rc.json", testcliconfig.EveryBlockJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := cliconfig.Read(testcliconfig.WriteFile(t, tc.file, tc.src))
			require.NoError(t, err)
			out := c.CLIConfigFor(user)
			require.NotContains(t, string(out), "plugin_cache_dir", "plugin_cache_dir is dropped:\n%s", out)
			require.NotContains(t, string(out), "plugin-cache")

			// Read back as Terraform reads it: the same parser.
			merged, err := cliconfig.Parse("merged.tfrc.json", out)
			require.NoError(t, err, string(out))
			got := testcliconfig.Comparable(merged)
			want := testcliconfig.Comparable(user)
			require.Empty(t, got.PluginCacheDir)
			want.PluginCacheDir = ""
			// Everything but provider_installation passes through as the
			// user's terraform decodes it.
			gotPI, wantPI := got.ProviderInstallation, want.ProviderInstallation
			got.ProviderInstallation, want.ProviderInstallation = nil, nil
			require.Equal(t, want, got, string(out))

			// provider_installation: the user's dev overrides first, the
			// cache for what it holds, then the user's methods, none of
			// which may install what the cache holds.
			require.Equal(t, wantPI.DevOverrides, gotPI.DevOverrides)
			require.Equal(t, cliconfig.InstallMethod{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.PackagesDir()),
				Include: []string{cached.String()}}, gotPI.Methods[0])
			require.Len(t, gotPI.Methods, 1+len(wantPI.Methods))
			for i, m := range wantPI.Methods {
				m.Exclude = append(m.Exclude, cached.String())
				require.Equal(t, m, gotPI.Methods[i+1])
			}
		})
	}

	t.Run("no provider_installation", func(t *testing.T) {
		user, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc", "credentials \"corp.example\" {\n  token = \"t\"\n}\nplugin_cache_dir = \"/x\"\n"))
		require.NoError(t, err)
		merged, err := cliconfig.Parse("merged.json", c.CLIConfigFor(user))
		require.NoError(t, err)
		require.Equal(t, map[string]map[string]any{"corp.example": {"token": "t"}}, merged.Credentials)
		require.Empty(t, merged.PluginCacheDir)
		require.Equal(t, []cliconfig.InstallMethod{
			{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.PackagesDir()), Include: []string{cached.String()}},
			{Kind: "direct", Exclude: []string{cached.String()}},
		}, testcliconfig.Comparable(merged).ProviderInstallation.Methods)
	})

	t.Run("methods in order, kinds repeated", func(t *testing.T) {
		user, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc", `provider_installation {
  network_mirror {
    url = "https://a.example/"
  }
  direct {
    include = ["hashicorp/*"]
  }
  network_mirror {
    url = "https://b.example/"
  }
  oci_mirror {
    repository_template = "r.example/${namespace}/${type}"
    include             = ["corp.example/*/*"]
  }
}
`))
		require.NoError(t, err)
		merged, err := cliconfig.Parse("merged.json", c.CLIConfigFor(user))
		require.NoError(t, err)
		x := []string{cached.String()}
		require.Equal(t, []cliconfig.InstallMethod{
			{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.PackagesDir()), Include: x},
			{Kind: "network_mirror", Location: "https://a.example/", Exclude: x},
			{Kind: "direct", Include: []string{"hashicorp/*"}, Exclude: x},
			{Kind: "network_mirror", Location: "https://b.example/", Exclude: x},
			{Kind: "oci_mirror", Include: []string{"corp.example/*/*"}, Exclude: x,
				Other: map[string]any{"repository_template": "r.example/${namespace}/${type}"}},
		}, testcliconfig.Comparable(merged).ProviderInstallation.Methods)
	})

	t.Run("empty cache", func(t *testing.T) {
		empty, err := Open(t.TempDir(), WithSource(FilesystemMirror(t.TempDir())))
		require.NoError(t, err)
		user, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc", testcliconfig.EveryBlockHCL))
		require.NoError(t, err)
		merged, err := cliconfig.Parse("merged.json", empty.CLIConfigFor(user))
		require.NoError(t, err)
		require.Equal(t, testcliconfig.Comparable(user).ProviderInstallation, testcliconfig.Comparable(merged).ProviderInstallation,
			"nothing cached: the user's provider_installation as it was")
	})
}

func TestWithCLIConfigOption(t *testing.T) {
	_, err := Open(t.TempDir(), WithCLIConfig(nil))
	require.NoError(t, err, "nil means no file")
	for name, f := range map[string]*cliconfig.File{
		"bad credentials host": {Path: "rc", Credentials: map[string]map[string]any{"bad host!": {"token": "x"}}},
		"bad host block":       {Path: "rc", Hosts: map[string]map[string]any{"bad host!": {}}},
		"token not a string":   {Path: "rc", Credentials: map[string]map[string]any{"a.example": {"token": 1}}},
	} {
		_, err := Open(t.TempDir(), WithCLIConfig(f))
		require.ErrorIs(t, err, ErrInvalidCLIConfig, name)
		require.True(t, strings.HasPrefix(err.Error(), "pluginc: WithCLIConfig: "), err.Error())
	}
}

// tokenRegistryCLIFile writes a user CLI config for a loopback registry
// that requires a token: its credentials (when token is not empty) and a
// host block sending providers.v1 to its loopback address, which
// Terraform can reach (it cannot resolve the registry's test host name).
func tokenRegistryCLIFile(t *testing.T, srv *testregistry.Server, token, extra string) string {
	t.Helper()
	src := fmt.Sprintf(`host %q {
  services = {
    "providers.v1" = "%sv1/providers/"
  }
}
disable_checkpoint = true
%s`, srv.Host(), srv.LoopbackURL(), extra)
	if token != "" {
		src += fmt.Sprintf("credentials %q {\n  token = %q\n}\n", srv.Host(), token)
	}
	return testcliconfig.WriteFile(t, ".terraformrc", src)
}

// TestWithCLIConfigCredentials: a registry that refuses requests without
// its token serves the cache whose CLI config has the token in a
// credentials block; TF_TOKEN_<host> still wins over the file.
func TestWithCLIConfigCredentials(t *testing.T) {
	const tok = "s3cret-token"
	f := startRegistry(t, 0, []string{"1.0.0"}, testregistry.WithToken(tok))
	req := Requirement{Provider: f.p, Constraints: ">= 1.0"}
	ctx := context.Background()

	// No credentials: refused.
	_, err := f.open(t, t.TempDir()).Ensure(ctx, req)
	require.ErrorIs(t, err, ErrDownload)
	require.Contains(t, err.Error(), "401")

	user, err := cliconfig.Read(tokenRegistryCLIFile(t, f.srv, tok, ""))
	require.NoError(t, err)
	c := f.open(t, t.TempDir(), WithCLIConfig(user), WithLookupEnv(func(string) (string, bool) { return "", false }))
	pkgs, err := c.Ensure(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "1.0.0", pkgs[0].Version)
	require.Equal(t, 1, f.srv.Downloads(f.key("1.0.0")))

	// TF_TOKEN_<host> wins, as in Terraform: a wrong one is refused.
	env := func(name string) (string, bool) {
		if name == "TF_TOKEN_"+strings.ReplaceAll(f.srv.Host(), ".", "_") {
			return "wrong", true
		}
		return "", false
	}
	_, err = f.open(t, t.TempDir(), WithCLIConfig(user), WithLookupEnv(env)).Ensure(ctx, req)
	require.ErrorIs(t, err, ErrDownload)
	require.Contains(t, err.Error(), "401")

	// A host block without providers.v1 says so, naming the file.
	noReg := &cliconfig.File{Path: "/home/u/.terraformrc", Hosts: map[string]map[string]any{f.srv.Host(): {"modules.v1": "/m/"}}}
	_, err = f.open(t, t.TempDir(), WithCLIConfig(noReg)).Ensure(ctx, req)
	require.ErrorIs(t, err, ErrInvalidCLIConfig)
	require.Contains(t, err.Error(), "/home/u/.terraformrc")
	require.Contains(t, err.Error(), "providers.v1")
}

// TestWithCLIConfigMirrorCredentials: a network mirror gets the token of
// the credentials block for its host, port included (as Terraform keys
// it), and no other host's.
func TestWithCLIConfigMirrorCredentials(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	user := &cliconfig.File{Path: "rc", Credentials: map[string]map[string]any{
		host:         {"token": "mirror-token"},
		"other.test": {"token": "not-for-the-mirror"},
		"127.0.0.1":  {"token": "wrong-port"},
	}}
	c, err := Open(t.TempDir(), WithSource(NetworkMirror(srv.URL+"/")), WithHTTPClient(srv.Client()),
		WithCLIConfig(user), WithLookupEnv(func(string) (string, bool) { return "", false }))
	require.NoError(t, err)
	_, err = c.Ensure(context.Background(), Requirement{Provider: testProvider(t)})
	require.ErrorIs(t, err, ErrNotFound)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Bearer mirror-token"}, got)
}
