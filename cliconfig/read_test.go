package cliconfig_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/testkit/testcliconfig"
)

func TestReadCLIConfigEveryBlock(t *testing.T) {
	want := &cliconfig.File{
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
		ProviderInstallation: &cliconfig.ProviderInstallation{
			DevOverrides: map[string]string{"corp.example/acme/dev": "/home/u/src/dev"},
			Methods: []cliconfig.InstallMethod{
				{Kind: "network_mirror", Location: "https://mirror.corp.example/providers/",
					Include: []string{testcliconfig.PublicHost + "/hashicorp/*", "corp.example/*/*"}},
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
		{"hcl", ".terraformrc", testcliconfig.EveryBlockHCL},
		{"json", "main.tfrc.json", testcliconfig.EveryBlockJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testcliconfig.WriteFile(t, tc.file, tc.src)
			f, err := cliconfig.Read(path)
			require.NoError(t, err)
			require.Equal(t, path, f.Path)
			require.Equal(t, want, testcliconfig.Comparable(f))
		})
	}
}

func TestReadCLIConfigLines(t *testing.T) {
	// Lines are kept for the errors Sources reports later.
	f, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc.json", testcliconfig.EveryBlockJSON))
	require.NoError(t, err)
	var lines []int
	for _, m := range f.ProviderInstallation.Methods {
		lines = append(lines, m.Line)
	}
	require.Equal(t, []int{20, 24, 25}, lines)
	f, err = cliconfig.Read(testcliconfig.WriteFile(t, "rc", testcliconfig.EveryBlockHCL))
	require.NoError(t, err)
	lines = nil
	for _, m := range f.ProviderInstallation.Methods {
		lines = append(lines, m.Line)
	}
	require.Equal(t, []int{29, 33, 37}, lines)
}

func TestReadCLIConfigEmptyAndMissing(t *testing.T) {
	f, err := cliconfig.Read(testcliconfig.WriteFile(t, "rc", "# nothing but a comment\n"))
	require.NoError(t, err)
	require.Nil(t, f.ProviderInstallation)
	require.Empty(t, f.Credentials)

	_, err = cliconfig.Read(filepath.Join(t.TempDir(), "absent.rc"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotErrorIs(t, err, cliconfig.ErrInvalid)
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
			path := testcliconfig.WriteFile(t, tc.file, tc.src)
			f, err := cliconfig.Read(path)
			require.Error(t, err)
			require.Nil(t, f)
			require.ErrorIs(t, err, cliconfig.ErrInvalid)
			var ce *cliconfig.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, path, ce.Path)
			require.Contains(t, err.Error(), path)
			require.Equal(t, tc.line, ce.Line, err.Error())
			require.Contains(t, err.Error(), fmt.Sprintf("line %d:", tc.line))
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestCLIConfigMerge(t *testing.T) {
	main, err := cliconfig.Read(testcliconfig.WriteFile(t, ".terraformrc", `credentials "a.example" {
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
	login, err := cliconfig.Read(testcliconfig.WriteFile(t, "credentials.tfrc.json", `{
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
	require.ErrorIs(t, err, cliconfig.ErrInvalid)
	require.Contains(t, err.Error(), "provider_installation")
	h1 := &cliconfig.File{Path: "one", CredentialsHelpers: map[string][]string{"x": nil}}
	h2 := &cliconfig.File{Path: "two", CredentialsHelpers: map[string][]string{"y": nil}}
	_, err = h1.Merge(h2)
	require.ErrorIs(t, err, cliconfig.ErrInvalid)
	require.Contains(t, err.Error(), "one and two")
}
