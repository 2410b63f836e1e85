package pluginc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// TestGrammarParse: each grammar accepts exactly the namespaces its
// engines accept (read from their address libraries: Terraform 1.16's
// terraform-registry-address v0.5.0 ParseProviderNamespace, OpenTofu's
// and older Terraform's ParseProviderPart), a type never holds an
// underscore, and ParseProvider is the widest grammar.
func TestGrammarParse(t *testing.T) {
	for _, tc := range []struct {
		in         string
		dash, unde string // the parsed address, "" when refused
	}{
		{"registry.example.test/my-org/foo", "registry.example.test/my-org/foo", "registry.example.test/my-org/foo"},
		{"registry.example.test/my_org/foo", "", "registry.example.test/my_org/foo"},
		{"Registry.Example.Test/My_Org/Foo", "", "registry.example.test/my_org/foo"},
		{"registry.example.test/a_b_c/foo", "", "registry.example.test/a_b_c/foo"},
		{"registry.example.test/my__org/foo", "", "registry.example.test/my__org/foo"},
		{"registry.example.test/my_-org/foo", "", "registry.example.test/my_-org/foo"},
		{"registry.example.test/o1_2/foo", "", "registry.example.test/o1_2/foo"},
		{"registry.example.test/_org/foo", "", ""},
		{"registry.example.test/org_/foo", "", ""},
		{"registry.example.test/_/foo", "", ""},
		{"registry.example.test/-org/foo", "", ""},
		{"registry.example.test/org-/foo", "", ""},
		{"registry.example.test/my.org/foo", "", ""},
		{"registry.example.test/my!org/foo", "", ""},
		{"registry.example.test/my org/foo", "", ""},
		{"registry.example.test/my_org/foo_bar", "", ""},
		{"registry.example.test/myorg/foo_bar", "", ""},
		{"reg_istry.example.test/myorg/foo", "", ""},
		{"my_org/foo", "", "registry.terraform.io/my_org/foo"},
		{"foo_bar", "", ""},
	} {
		for g, want := range map[Grammar]string{DashNamespaces: tc.dash, UnderscoreNamespaces: tc.unde} {
			p, err := g.Parse(tc.in)
			if want == "" {
				require.ErrorIs(t, err, ErrInvalidProvider, "%v must refuse %q, got %v", g, tc.in, p)
				require.Contains(t, err.Error(), `"`+tc.in+`"`, "the error names the address")
				continue
			}
			require.NoError(t, err, "%v must accept %q", g, tc.in)
			require.Equal(t, strings.Replace(want, "registry.terraform.io", p.Hostname, 1), p.String(), "%v: %q", g, tc.in)
		}
		wide, err := ParseProvider(tc.in)
		u, uerr := UnderscoreNamespaces.Parse(tc.in)
		require.Equal(t, u, wide, "ParseProvider is UnderscoreNamespaces.Parse: %q", tc.in)
		require.Equal(t, uerr == nil, err == nil, "%q", tc.in)
	}

	// The refusal of an underscore under the narrower grammar says which
	// engine would take it; an unknown grammar is refused, never guessed.
	_, err := DashNamespaces.Parse("registry.example.test/my_org/foo")
	require.ErrorContains(t, err, `bad namespace "my_org"`)
	require.ErrorContains(t, err, "Terraform 1.16 accepts underscores")
	_, err = UnderscoreNamespaces.Parse("registry.example.test/_org/foo")
	require.ErrorContains(t, err, "may not use leading or trailing dashes or underscores")
	_, err = Grammar(9).Parse("registry.example.test/org/foo")
	require.ErrorIs(t, err, ErrInvalidProvider)
	require.ErrorContains(t, err, "unknown address grammar Grammar(9)")
}

// TestUnderscoreNamespaceCache: a provider whose namespace holds an
// underscore (Terraform 1.16) goes through the cache like any other: its
// entry at HOST/my_org/TYPE/VERSION/PLATFORM, its lock file, which parses
// back to the same packages, the CLI config terraform is handed, and a
// MirrorHandler that serves it (index, archive) to a NetworkMirror
// client, which gets the same package and lock entry, and a registry
// (Registry, signed) that serves it under that namespace.
func TestUnderscoreNamespaceCache(t *testing.T) {
	ctx := context.Background()
	const host, ns = "registry.example.test", "my_org"
	bin := testprovider.Build(t)
	fsm := t.TempDir()
	testprovider.WriteFilesystemMirrorAs(t, fsm, host, ns, bin, "1.0.0")
	p, err := ParseProvider(host + "/" + ns + "/" + testprovider.Type)
	require.NoError(t, err)
	require.Equal(t, Provider{Hostname: host, Namespace: ns, Type: testprovider.Type}, p)

	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(fsm)))
	require.NoError(t, err)
	pkgs, err := c.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Len(t, pkgs, 1)
	require.Equal(t, filepath.Join(c.PackagesDir(), host, ns, testprovider.Type, "1.0.0", testprovider.Platform), pkgs[0].Dir)
	require.FileExists(t, filepath.Join(pkgs[0].Dir, testprovider.ExecutableName("1.0.0")))
	require.Contains(t, string(c.CLIConfig()), c.PackagesDir(), "terraform reads the entry from the cache's packages dir")

	lock := LockFile(pkgs)
	require.Contains(t, string(lock), `provider "`+host+`/`+ns+`/`+testprovider.Type+`" {`)
	locks, err := ParseLockFile(lock)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	require.Equal(t, p, locks[0].Provider)
	require.Equal(t, "1.0.0", locks[0].Version)
	require.Equal(t, pkgs[0].Hashes, locks[0].Hashes)

	// Locked: the lock file's pin and hashes are checked against the entry.
	again, err := c.Ensure(ctx, Requirement{Provider: p, Locked: locks[0].Version, LockedHashes: locks[0].Hashes})
	require.NoError(t, err)
	require.Equal(t, pkgs[0].Dir, again[0].Dir)

	srv := httptest.NewTLSServer(c.MirrorHandler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/" + host + "/" + ns + "/" + testprovider.Type + "/index.json")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"versions":{"1.0.0":{}}}`, body)
	code, body = get("/" + host + "/_org/" + testprovider.Type + "/index.json")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "_org")

	client, err := Open(t.TempDir(), WithSource(NetworkMirror(srv.URL+"/")), WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	viaMirror, err := client.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(client.PackagesDir(), host, ns, testprovider.Type, "1.0.0", testprovider.Platform), viaMirror[0].Dir)
	require.Equal(t, pkgs[0].Hashes[0], viaMirror[0].Hashes[0], "the mirror serves the entry's package")
	require.Contains(t, string(LockFile(viaMirror)), `provider "`+host+`/`+ns+`/`+testprovider.Type+`" {`)
	_, err = os.Stat(filepath.Join(viaMirror[0].Dir, testprovider.ExecutableName("1.0.0")))
	require.NoError(t, err)

	// From a registry (its API at /v1/providers/my_org/TYPE/...), signed.
	reg := testregistry.Start(t, testregistry.WithHost(host))
	require.NoError(t, reg.AddFile(ns, testprovider.Type, "1.0.0", testprovider.Platform, bin.Zip(t, "1.0.0")))
	direct, err := Open(t.TempDir(), WithSource(Registry()), WithHTTPClient(reg.HTTPClient()))
	require.NoError(t, err)
	viaRegistry, err := direct.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(direct.PackagesDir(), host, ns, testprovider.Type, "1.0.0", testprovider.Platform), viaRegistry[0].Dir)
	require.Contains(t, viaRegistry[0].Hashes, pkgs[0].Hashes[0], "the registry's package is the mirror's")
}
