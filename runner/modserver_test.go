package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// TestServerCLIConfig: the CLI config a unit's get runs with under
// WithModuleServer sends each registry host its calls name (the engine's
// default host for a three-part source) to the server, keeps the other
// services of the user's host block and every other host, and never
// sends the user's own token for such a host: the server's takes its
// place. Local, git and dynamic calls name no registry host; git::https
// calls name their git host (ssh and plain URLs none).
func TestServerCLIConfig(t *testing.T) {
	calls := []modtree.Call{
		{Source: "registry.example.test/acme/vpc/aws"},
		{Source: "acme/db/aws"},
		{Source: "registry.example.test/acme/other/aws"},
		{Source: "./local", Local: true},
		{Source: "git::https://git.example.test/x.git?ref=v1"},
		{Source: "var.src", Dynamic: true},
		{Source: "registry.example.test/acme/vpc/aws//sub"},
	}
	hosts := registryHosts(calls, "default.example.test")
	require.Equal(t, []string{"registry.example.test", "default.example.test"}, hosts)
	require.Equal(t, []string{"git.example.test"}, gitHosts(append(calls,
		modtree.Call{Source: "git::https://GIT.example.test/y.git//sub?ref=v2"},
		modtree.Call{Source: "git::ssh://git.other.test/z.git"},
		modtree.Call{Source: "https://files.example.test/m.zip"})))

	user := &cliconfig.File{
		Hosts: map[string]map[string]any{
			"registry.example.test":  {"modules.v1": "https://127.0.0.1:1/v1/modules/", "providers.v1": "https://127.0.0.1:1/v1/providers/"},
			"elsewhere.example.test": {"modules.v1": "https://elsewhere/"},
		},
		Credentials: map[string]map[string]any{"registry.example.test": {"token": "users-own"}, "elsewhere.example.test": {"token": "keep"}},
	}
	f := serverCLIConfig(user, "https://mods.example.test:8443/", "srv-token", hosts)
	require.Equal(t, map[string]any{"modules.v1": "https://mods.example.test:8443/modules.v1/registry.example.test/",
		"providers.v1": "https://127.0.0.1:1/v1/providers/"}, f.Hosts["registry.example.test"])
	require.Equal(t, map[string]any{"modules.v1": "https://mods.example.test:8443/modules.v1/default.example.test/"}, f.Hosts["default.example.test"])
	require.Equal(t, user.Hosts["elsewhere.example.test"], f.Hosts["elsewhere.example.test"])
	require.Equal(t, map[string]any{"token": "srv-token"}, f.Credentials["registry.example.test"])
	require.Equal(t, map[string]any{"token": "keep"}, f.Credentials["elsewhere.example.test"])
	require.Equal(t, "https://127.0.0.1:1/v1/modules/", user.Hosts["registry.example.test"]["modules.v1"], "the user's config is not changed")

	f = serverCLIConfig(user, "https://mods.example.test/", "", hosts)
	require.NotContains(t, f.Credentials, "registry.example.test", "no server token: the user's is not sent to the server")

	require.Equal(t, "TF_TOKEN_mods_example__1_test", tokenVar("mods.example-1.test:8443"))
}

// TestWithModuleServerRefusesURLs: only https, nothing secret in it.
func TestWithModuleServerRefusesURLs(t *testing.T) {
	for _, u := range []string{"", "http://mods.example.test/", "https://u:p@mods.example.test/", "https://mods.example.test/?t=1"} {
		_, err := New(WithModuleServer(u))
		require.ErrorIs(t, err, ErrBadOption, u)
	}
	_, err := ModuleServer(t.TempDir(), WithServerToken(""))
	require.ErrorIs(t, err, ErrBadOption)
}
