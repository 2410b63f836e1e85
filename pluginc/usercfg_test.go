package pluginc

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"github.com/tfisolate/tfisolate/internal/testprovider"
	"github.com/tfisolate/tfisolate/internal/testregistry"
)

// publicHost is the default registry host, never spelled out.
var publicHost = tfaddr.DefaultProviderRegistryHost.String()

// writeCLIFile writes src to a file named name in a temp dir.
func writeCLIFile(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

// everyBlockHCL and everyBlockJSON say the same thing in Terraform's two
// CLI config syntaxes: every block kind, and settings pluginc does not
// model.
var everyBlockHCL = `# a user's ~/.terraformrc
disable_checkpoint = true
disable_checkpoint_signature = true
plugin_cache_dir = "/home/u/.terraform.d/plugin-cache"

credentials "tfe.example.com" {
  token = "tok-1"
}
credentials "registry.corp.example:8443" {
  token = "tok-2"
}
credentials_helper "vault" {
  args = ["--mount", "tf"]
}
host "tfe.example.com" {
  services = {
    "providers.v1" = "https://tfe.example.com/api/providers/"
    "login.v1" = {
      client = "terraform-cli"
      ports  = [10000, 10010]
    }
  }
}

provider_installation {
  dev_overrides {
    "corp.example/acme/dev" = "/home/u/src/dev"
  }
  network_mirror {
    url     = "https://mirror.corp.example/providers/"
    include = ["` + publicHost + `/hashicorp/*", "corp.example/*/*"]
  }
  filesystem_mirror {
    path    = "/opt/providers"
    exclude = ["hashicorp/null"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}

providers {
  legacy = "/opt/legacy-provider"
}
plugin_cache_may_break_dependency_lock_file = true
`

var everyBlockJSON = `{
  "disable_checkpoint": true,
  "disable_checkpoint_signature": true,
  "plugin_cache_dir": "/home/u/.terraform.d/plugin-cache",
  "credentials": {
    "tfe.example.com": {"token": "tok-1"},
    "registry.corp.example:8443": {"token": "tok-2"}
  },
  "credentials_helper": {"vault": {"args": ["--mount", "tf"]}},
  "host": {
    "tfe.example.com": {
      "services": {
        "providers.v1": "https://tfe.example.com/api/providers/",
        "login.v1": {"client": "terraform-cli", "ports": [10000, 10010]}
      }
    }
  },
  "provider_installation": [{
    "dev_overrides": [{"corp.example/acme/dev": "/home/u/src/dev"}],
    "network_mirror": [{
      "url": "https://mirror.corp.example/providers/",
      "include": ["` + publicHost + `/hashicorp/*", "corp.example/*/*"]
    }],
    "filesystem_mirror": [{"path": "/opt/providers", "exclude": ["hashicorp/null"]}],
    "direct": [{"exclude": ["*/*/*"]}]
  }],
  "providers": [{"legacy": "/opt/legacy-provider"}],
  "plugin_cache_may_break_dependency_lock_file": true
}
`

// comparable strips what differs between two reads of the same settings
// (the path, the lines).
func comparable(f *CLIConfigFile) *CLIConfigFile {
	c := *f
	c.Path = ""
	if f.ProviderInstallation != nil {
		pi := *f.ProviderInstallation
		pi.file, pi.line = "", 0
		pi.Methods = nil
		for _, m := range f.ProviderInstallation.Methods {
			m.file, m.line = "", 0
			pi.Methods = append(pi.Methods, m)
		}
		c.ProviderInstallation = &pi
	}
	return &c
}

func TestReadCLIConfigEveryBlock(t *testing.T) {
	want := &CLIConfigFile{
		DisableCheckpoint:          true,
		DisableCheckpointSignature: true,
		PluginCacheDir:             "/home/u/.terraform.d/plugin-cache",
		Credentials: map[string]map[string]any{
			"tfe.example.com":            {"token": "tok-1"},
			"registry.corp.example:8443": {"token": "tok-2"},
		},
		CredentialsHelpers: map[string][]string{"vault": {"--mount", "tf"}},
		Hosts: map[string]map[string]any{"tfe.example.com": {
			"providers.v1": "https://tfe.example.com/api/providers/",
			// HCL 1 decodes a nested object as a list of one object.
			"login.v1": []map[string]any{{"client": "terraform-cli", "ports": []any{10000, 10010}}},
		}},
		ProviderInstallation: &ProviderInstallation{
			DevOverrides: map[string]string{"corp.example/acme/dev": "/home/u/src/dev"},
			Methods: []InstallMethod{
				{Kind: "network_mirror", Location: "https://mirror.corp.example/providers/",
					Include: []string{publicHost + "/hashicorp/*", "corp.example/*/*"}},
				{Kind: "filesystem_mirror", Location: "/opt/providers", Exclude: []string{"hashicorp/null"}},
				{Kind: "direct", Exclude: []string{"*/*/*"}},
			},
		},
		Other: map[string]any{
			"providers": []map[string]any{{"legacy": "/opt/legacy-provider"}},
			"plugin_cache_may_break_dependency_lock_file": true,
		},
	}
	for _, tc := range []struct{ name, file, src string }{
		{"hcl", ".terraformrc", everyBlockHCL},
		{"json", "main.tfrc.json", everyBlockJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeCLIFile(t, tc.file, tc.src)
			f, err := ReadCLIConfig(path)
			require.NoError(t, err)
			require.Equal(t, path, f.Path)
			require.Equal(t, want, comparable(f))
		})
	}
}

func TestReadCLIConfigLines(t *testing.T) {
	// Lines are kept for the errors Sources reports later.
	f, err := ReadCLIConfig(writeCLIFile(t, "rc.json", everyBlockJSON))
	require.NoError(t, err)
	var lines []int
	for _, m := range f.ProviderInstallation.Methods {
		lines = append(lines, m.line)
	}
	require.Equal(t, []int{20, 24, 25}, lines)
	f, err = ReadCLIConfig(writeCLIFile(t, "rc", everyBlockHCL))
	require.NoError(t, err)
	lines = nil
	for _, m := range f.ProviderInstallation.Methods {
		lines = append(lines, m.line)
	}
	require.Equal(t, []int{29, 33, 37}, lines)
}

func TestReadCLIConfigEmptyAndMissing(t *testing.T) {
	f, err := ReadCLIConfig(writeCLIFile(t, "rc", "# nothing but a comment\n"))
	require.NoError(t, err)
	require.Nil(t, f.ProviderInstallation)
	require.Empty(t, f.Credentials)

	_, err = ReadCLIConfig(filepath.Join(t.TempDir(), "absent.rc"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotErrorIs(t, err, ErrInvalidCLIConfig)
}

func TestReadCLIConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		line            int
		msg             string
	}{
		{"unclosed block", "rc", "disable_checkpoint = true\ncredentials \"a.example\" {\n  token = \"x\"\n", 2, "never closed"},
		{"key at end of file", "rc", "disable_checkpoint = true\n\ncredentials \"a.example\"\n# trailing comment\n", 3, "expected start of object"},
		{"bad token", "rc", "a = 1\nb = ]\n", 2, "Unknown token"},
		{"unclosed list", "rc", "a = 1\nb = [1,\n\n", 2, "never closed"},
		{"json syntax", "rc.json", "{\n  \"a\": 1,\n  \"b\": @\n}\n", 3, "illegal char"},
		{"json string", "rc.json", "{\n  \"credentials\": {\n    \"a.example\": {\"token\": \"x}\n  }\n}\n", 3, "literal not terminated"},
		{"wrong type", "rc", "plugin_cache_dir = \"/x\"\n\ndisable_checkpoint = [\"yes\"]\n", 3, "disable_checkpoint"},
		{"bad credentials host", "rc", "credentials \"ok.example\" {\n token = \"x\"\n}\ncredentials \"not a host!\" {\n token = \"y\"\n}\n", 4, "invalid host name"},
		{"bad credentials host json", "rc.json", "{\n  \"credentials\": {\n    \"ok.example\": {\"token\": \"x\"},\n    \"not a host!\": {\"token\": \"y\"}\n  }\n}\n", 4, "invalid host name"},
		{"bad host block", "rc", "host \"bad host\" {\n services = {}\n}\n", 1, "invalid host name"},
		{"token not a string", "rc", "\ncredentials \"a.example\" {\n token = [\"x\"]\n}\n", 2, "token must be a string"},
		{"two credentials helpers", "rc", "credentials_helper \"a\" {\n}\n\ncredentials_helper \"b\" {\n}\n", 4, "second credentials_helper"},
		{"two provider_installation", "rc", "provider_installation {\n direct {}\n}\nprovider_installation {\n direct {}\n}\n", 4, "first is on line 1"},
		{"installation as argument", "rc", "provider_installation = {\n direct {}\n}\n", 1, "must be a block"},
		{"installation with label", "rc", "provider_installation \"x\" {\n direct {}\n}\n", 1, "no labels"},
		{"unknown method", "rc", "provider_installation {\n  direct {}\n  network_mirrors {\n    url = \"https://m.example/\"\n  }\n}\n", 3, "unknown provider installation method \"network_mirrors\""},
		{"unknown method json", "rc.json", "{\"provider_installation\": [{\n  \"direct\": [{}],\n  \"mirror\": [{}]\n}]}\n", 3, "unknown provider installation method \"mirror\""},
		{"mirror without path", "rc", "provider_installation {\n  filesystem_mirror {\n    include = [\"a/b\"]\n  }\n}\n", 2, "\"path\" argument is required"},
		{"network mirror without url", "rc", "provider_installation {\n  network_mirror {\n  }\n}\n", 2, "\"url\" argument is required"},
		{"dev_overrides not first", "rc", "provider_installation {\n  direct {}\n  dev_overrides {\n    \"a/b\" = \"/x\"\n  }\n}\n", 3, "dev_overrides must come before"},
		{"bad dev override", "rc", "provider_installation {\n  dev_overrides {\n    \"not/a/valid/address\" = \"/x\"\n  }\n}\n", 2, "not a provider source address"},
		{"bad pattern", "rc", "provider_installation {\n  direct {\n    exclude = [\"just-one-part\"]\n  }\n}\n", 2, "want HOST/NAMESPACE/TYPE"},
		{"wildcard namespace", "rc", "provider_installation {\n  direct {\n    include = [\"h.example/*/aws\"]\n  }\n}\n", 2, "wildcard namespace needs a wildcard type"},
		{"wildcard host", "rc", "provider_installation {\n  direct {\n    include = [\"*/hashicorp/*\"]\n  }\n}\n", 2, "wildcard host needs"},
		{"method as argument", "rc", "provider_installation {\n  direct = {}\n}\n", 2, "must be a block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeCLIFile(t, tc.file, tc.src)
			f, err := ReadCLIConfig(path)
			require.Error(t, err)
			require.Nil(t, f)
			require.ErrorIs(t, err, ErrInvalidCLIConfig)
			var ce *CLIConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, path, ce.Path)
			require.Contains(t, err.Error(), path)
			require.Equal(t, tc.line, ce.Line, err.Error())
			require.Contains(t, err.Error(), fmt.Sprintf("line %d:", tc.line))
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

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
		{publicHost + "/hashicorp/*", []Provider{p("hashicorp/aws"), p("hashicorp/null")}, []Provider{p("acme/aws"), p("corp.example/hashicorp/aws")}},
		{"hashicorp/aws", []Provider{p("hashicorp/aws"), p("aws"), p("HashiCorp/AWS")}, []Provider{p("hashicorp/null"), p("corp.example/hashicorp/aws")}},
		{"corp.example/*/*", []Provider{p("corp.example/a/b"), p("CORP.example/x/y")}, []Provider{p("hashicorp/aws"), p("other.example/a/b")}},
		{"corp.example:8443/acme/*", []Provider{p("corp.example:8443/acme/b")}, []Provider{p("corp.example/acme/b")}},
		{"*/*/*", []Provider{p("hashicorp/aws"), p("corp.example/a/b")}, nil},
		{"Corp.Example/ACME/Widget", []Provider{p("corp.example/acme/widget")}, []Provider{p("corp.example/acme/gadget")}},
	} {
		pp, err := parsePattern(tc.pattern, "")
		require.NoError(t, err, tc.pattern)
		for _, m := range tc.match {
			require.True(t, pp.matches(m), "%s should match %s", tc.pattern, m)
		}
		for _, m := range tc.miss {
			require.False(t, pp.matches(m), "%s should not match %s", tc.pattern, m)
		}
	}

	// Two-part patterns name the engine's default host.
	pp, err := parsePattern("hashicorp/aws", "tofu-registry.example")
	require.NoError(t, err)
	require.True(t, pp.matches(Provider{Hostname: "tofu-registry.example", Namespace: "hashicorp", Type: "aws"}))
	require.False(t, pp.matches(p("hashicorp/aws")))

	for _, bad := range []string{"", "a", "a/b/c/d", "*/a/b", "h.example/*/b", "h.example/a b/c", "bad host!/a/b", "a/-b"} {
		_, err := parsePattern(bad, "")
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
		{"not included", []string{publicHost + "/hashicorp/*"}, nil, false},
		{"excluded", nil, []string{testprovider.Source}, false},
		{"exclusion wins", []string{testprovider.Host + "/*/*"}, []string{testprovider.Host + "/" + testprovider.Namespace + "/*"}, false},
		{"other excluded", nil, []string{"hashicorp/*"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &CLIConfigFile{Path: "rc", ProviderInstallation: &ProviderInstallation{Methods: []InstallMethod{
				{Kind: "filesystem_mirror", Location: mirror, Include: tc.include, Exclude: tc.exclude},
			}}}
			srcs, err := f.Sources()
			require.NoError(t, err)
			require.Len(t, srcs, 1)
			vs, err := srcs[0].versions(context.Background(), nil, prov)
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
	f, err := ReadCLIConfig(writeCLIFile(t, "rc", `provider_installation {
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
	srcs, err := f.Sources()
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
	f, err = ReadCLIConfig(writeCLIFile(t, "rc", "disable_checkpoint = true\n"))
	require.NoError(t, err)
	srcs, err = f.Sources()
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
			path := writeCLIFile(t, "rc", tc.src)
			f, err := ReadCLIConfig(path)
			require.NoError(t, err, "Terraform (or OpenTofu) reads it; only the cache cannot use it")
			srcs, err := f.Sources()
			require.Nil(t, srcs)
			require.ErrorIs(t, err, ErrInvalidCLIConfig)
			var ce *CLIConfigError
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
	require.NoError(t, os.MkdirAll(filepath.Join(c.Dir(), p.Hostname, p.Namespace, p.Type, "1.0.0", "linux_amd64"), 0o755))
}

func TestCLIConfigFor(t *testing.T) {
	// A cache path HCL 1's quoted strings could not carry.
	c, err := Open(filepath.Join(t.TempDir(), `odd ${x} "q" \ dir`), WithSource(FilesystemMirror(t.TempDir())))
	require.NoError(t, err)
	require.Equal(t, c.CLIConfig(), c.CLIConfigFor(nil), "no user file: exactly CLIConfig")
	cached := Provider{Hostname: "corp.example", Namespace: "acme", Type: "widget"}
	fakeCachedProvider(t, c, cached)

	for _, tc := range []struct{ name, file, src string }{
		{"hcl", "rc", everyBlockHCL},
		{"json", "rc.json", everyBlockJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := ReadCLIConfig(writeCLIFile(t, tc.file, tc.src))
			require.NoError(t, err)
			out := c.CLIConfigFor(user)
			require.NotContains(t, string(out), "plugin_cache_dir", "plugin_cache_dir is dropped:\n%s", out)
			require.NotContains(t, string(out), "plugin-cache")

			// Read back as Terraform reads it: the same parser.
			merged, err := parseCLIConfig("merged.tfrc.json", out)
			require.NoError(t, err, string(out))
			got := comparable(merged)
			want := comparable(user)
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
			require.Equal(t, InstallMethod{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.Dir()),
				Include: []string{cached.String()}}, gotPI.Methods[0])
			require.Len(t, gotPI.Methods, 1+len(wantPI.Methods))
			for i, m := range wantPI.Methods {
				m.Exclude = append(m.Exclude, cached.String())
				require.Equal(t, m, gotPI.Methods[i+1])
			}
		})
	}

	t.Run("no provider_installation", func(t *testing.T) {
		user, err := ReadCLIConfig(writeCLIFile(t, "rc", "credentials \"corp.example\" {\n  token = \"t\"\n}\nplugin_cache_dir = \"/x\"\n"))
		require.NoError(t, err)
		merged, err := parseCLIConfig("merged.json", c.CLIConfigFor(user))
		require.NoError(t, err)
		require.Equal(t, map[string]map[string]any{"corp.example": {"token": "t"}}, merged.Credentials)
		require.Empty(t, merged.PluginCacheDir)
		require.Equal(t, []InstallMethod{
			{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.Dir()), Include: []string{cached.String()}},
			{Kind: "direct", Exclude: []string{cached.String()}},
		}, comparable(merged).ProviderInstallation.Methods)
	})

	t.Run("methods in order, kinds repeated", func(t *testing.T) {
		user, err := ReadCLIConfig(writeCLIFile(t, "rc", `provider_installation {
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
		merged, err := parseCLIConfig("merged.json", c.CLIConfigFor(user))
		require.NoError(t, err)
		x := []string{cached.String()}
		require.Equal(t, []InstallMethod{
			{Kind: "filesystem_mirror", Location: filepath.ToSlash(c.Dir()), Include: x},
			{Kind: "network_mirror", Location: "https://a.example/", Exclude: x},
			{Kind: "direct", Include: []string{"hashicorp/*"}, Exclude: x},
			{Kind: "network_mirror", Location: "https://b.example/", Exclude: x},
			{Kind: "oci_mirror", Include: []string{"corp.example/*/*"}, Exclude: x,
				Other: map[string]any{"repository_template": "r.example/${namespace}/${type}"}},
		}, comparable(merged).ProviderInstallation.Methods)
	})

	t.Run("empty cache", func(t *testing.T) {
		empty, err := Open(t.TempDir(), WithSource(FilesystemMirror(t.TempDir())))
		require.NoError(t, err)
		user, err := ReadCLIConfig(writeCLIFile(t, "rc", everyBlockHCL))
		require.NoError(t, err)
		merged, err := parseCLIConfig("merged.json", empty.CLIConfigFor(user))
		require.NoError(t, err)
		require.Equal(t, comparable(user).ProviderInstallation, comparable(merged).ProviderInstallation,
			"nothing cached: the user's provider_installation as it was")
	})
}

func TestCLIConfigMerge(t *testing.T) {
	main, err := ReadCLIConfig(writeCLIFile(t, ".terraformrc", `credentials "a.example" {
  token = "old"
}
plugin_cache_dir = "/first"
disable_checkpoint = true
provider_installation {
  direct {}
}
`))
	require.NoError(t, err)
	// What terraform login writes into the config dir.
	login, err := ReadCLIConfig(writeCLIFile(t, "credentials.tfrc.json", `{
  "credentials": {
    "a.example": {"token": "new"},
    "b.example": {"token": "b"}
  }
}
`))
	require.NoError(t, err)
	m, err := main.Merge(login)
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]any{"a.example": {"token": "new"}, "b.example": {"token": "b"}}, m.Credentials)
	require.Equal(t, "/first", m.PluginCacheDir)
	require.True(t, m.DisableCheckpoint)
	require.Same(t, main.ProviderInstallation, m.ProviderInstallation)
	require.Equal(t, main.Path+", "+login.Path, m.Path)
	require.Equal(t, "old", main.Credentials["a.example"]["token"], "inputs unchanged")

	_, err = m.Merge(main)
	require.ErrorIs(t, err, ErrInvalidCLIConfig)
	require.Contains(t, err.Error(), "provider_installation")
	h1 := &CLIConfigFile{Path: "one", CredentialsHelpers: map[string][]string{"x": nil}}
	h2 := &CLIConfigFile{Path: "two", CredentialsHelpers: map[string][]string{"y": nil}}
	_, err = h1.Merge(h2)
	require.ErrorIs(t, err, ErrInvalidCLIConfig)
	require.Contains(t, err.Error(), "one and two")
}

func TestWithCLIConfigOption(t *testing.T) {
	_, err := Open(t.TempDir(), WithCLIConfig(nil))
	require.NoError(t, err, "nil means no file")
	for name, f := range map[string]*CLIConfigFile{
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
	return writeCLIFile(t, ".terraformrc", src)
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

	user, err := ReadCLIConfig(tokenRegistryCLIFile(t, f.srv, tok, ""))
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
	noReg := &CLIConfigFile{Path: "/home/u/.terraformrc", Hosts: map[string]map[string]any{f.srv.Host(): {"modules.v1": "/m/"}}}
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
	user := &CLIConfigFile{Path: "rc", Credentials: map[string]map[string]any{
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
