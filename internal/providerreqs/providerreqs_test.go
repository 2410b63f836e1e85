package providerreqs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/pluginc"
)

// writeTree writes files (slash-separated paths relative to root).
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// requires is a module that requires the given providers: local name ->
// the body of its required_providers entry.
func requires(entries map[string]string) string {
	s := "terraform {\n  required_providers {\n"
	for name, body := range entries {
		s += "    " + name + " = " + body + "\n"
	}
	return s + "  }\n}\n"
}

func provider(host, ns, typ string) pluginc.Provider {
	return pluginc.Provider{Hostname: host, Namespace: ns, Type: typ}
}

// Provider requirements declared in versions.tofu are found under
// OpenTofu's rule (and hide versions.tf's), and not under terraform's.
func TestDiscoverTofuFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf":       `resource "terraform_data" "x" {}`,
		"versions.tofu": "terraform {\n  required_providers {\n    tfitest = { source = \"example.invalid/ns/tfitest\", version = \"1.0.0\" }\n  }\n}",
		"versions.tf":   "terraform {\n  required_providers {\n    other = { source = \"example.invalid/ns/other\" }\n  }\n}",
	})
	reqs, err := Discover(modtree.Walk(dir, modtree.TofuFiles), Unit{Host: "host.invalid", Files: modtree.TofuFiles})
	require.NoError(t, err)
	require.Equal(t, []pluginc.Requirement{{Provider: provider("example.invalid", "ns", "tfitest"), Constraints: "1.0.0"}}, reqs)
	reqs, err = Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid", Files: modtree.TerraformFiles})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	require.Equal(t, "other", reqs[0].Provider.Type)
}

// The root and the local modules it calls, two levels down, are merged
// per provider: constraints in the order found, each once, blank ones
// left out; short addresses on the engine's host; the built-in provider
// left out; sorted by address.
func TestDiscoverMerges(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf": requires(map[string]string{
			"a":         `{ source = "example.invalid/ns/a", version = ">= 1.0" }`,
			"aws":       `{ version = "~> 5.0" }`,
			"terraform": `{ source = "terraform.io/builtin/terraform" }`,
		}) + "module \"m\" {\n  source = \"./mods/m\"\n}\n",
		"mods/m/main.tf": requires(map[string]string{
			"a":     `{ source = "example.invalid/ns/a", version = ">= 1.0" }`,
			"local": `{ source = "acme/local" }`,
		}) + "module \"n\" {\n  source = \"../n\"\n}\n",
		"mods/n/main.tf": requires(map[string]string{
			"a":    `{ source = "example.invalid/ns/a", version = "< 2.0" }`,
			"null": `{ source = "null", version = " " }`,
		}) + "resource \"terraform_data\" \"x\" {}\n",
	})
	reqs, err := Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid", Files: modtree.TerraformFiles})
	require.NoError(t, err)
	require.Equal(t, []pluginc.Requirement{
		{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0, < 2.0"},
		{Provider: provider("host.invalid", "acme", "local"), Constraints: ""},
		{Provider: provider("host.invalid", "hashicorp", "aws"), Constraints: "~> 5.0"},
		{Provider: provider("host.invalid", "hashicorp", "null"), Constraints: ""},
	}, reqs)

	none, err := Discover(modtree.Walk(t.TempDir(), modtree.TerraformFiles), Unit{Host: "host.invalid"})
	require.NoError(t, err)
	require.Empty(t, none)
}

// The root's lock file pins versions and hashes, as terraform init keeps
// them; with Upgrade they are ignored and a broken lock file does not
// matter; without, a broken one is an error naming it.
func TestDiscoverLocked(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf": requires(map[string]string{
			"a": `{ source = "example.invalid/ns/a", version = ">= 1.0" }`,
			"b": `{ source = "example.invalid/ns/b" }`,
		}),
		LockFileName: "provider \"example.invalid/ns/a\" {\n  version = \"1.2.3\"\n  hashes = [\n    \"h1:AAAA=\",\n    \"zh:0123\",\n  ]\n}\n",
	})
	tree := modtree.Walk(dir, modtree.TerraformFiles)
	reqs, err := Discover(tree, Unit{Host: "host.invalid"})
	require.NoError(t, err)
	require.Equal(t, []pluginc.Requirement{
		{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0", Locked: "1.2.3", LockedHashes: []string{"h1:AAAA=", "zh:0123"}},
		{Provider: provider("example.invalid", "ns", "b")},
	}, reqs)

	reqs, err = Discover(tree, Unit{Host: "host.invalid", Upgrade: true})
	require.NoError(t, err)
	require.Equal(t, []pluginc.Requirement{
		{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0"},
		{Provider: provider("example.invalid", "ns", "b")},
	}, reqs)

	writeTree(t, dir, map[string]string{LockFileName: "provider {"})
	_, err = Discover(tree, Unit{Host: "host.invalid"})
	require.ErrorIs(t, err, pluginc.ErrInvalidLockFile)
	require.ErrorContains(t, err, LockFileName+" in "+dir)
	_, err = Discover(tree, Unit{Host: "host.invalid", Upgrade: true})
	require.NoError(t, err)
}

// The modules a modules.json records (a remote module and the module it
// calls, at relative and absolute Dirs) are read too; its root record is
// the tree's own root. A manifest that is missing or does not parse, and
// a recorded module that does not, are errors naming them.
func TestDiscoverManifest(t *testing.T) {
	dir := t.TempDir()
	data := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf": requires(map[string]string{"a": `{ source = "example.invalid/ns/a", version = ">= 1.0" }`}),
	})
	writeTree(t, data, map[string]string{
		"modules/net/main.tf":     requires(map[string]string{"a": `{ source = "example.invalid/ns/a", version = "< 2.0" }`}),
		"modules/net/sub/main.tf": requires(map[string]string{"b": `{ source = "ns/b" }`}),
	})
	rel, err := filepath.Rel(dir, filepath.Join(data, "modules", "net"))
	require.NoError(t, err)
	manifest := filepath.Join(data, "modules", "modules.json")
	writeTree(t, data, map[string]string{"modules/modules.json": `{"Modules":[
{"Key":"","Source":"","Dir":"."},
{"Key":"net","Source":"example.invalid/acme/net/x","Version":"1.0.0","Dir":"` + filepath.ToSlash(rel) + `"},
{"Key":"net.sub","Source":"./sub","Dir":"` + filepath.ToSlash(filepath.Join(data, "modules", "net", "sub")) + `"}]}`})

	tree := modtree.Walk(dir, modtree.TerraformFiles)
	reqs, err := Discover(tree, Unit{Manifest: manifest, Host: "host.invalid"})
	require.NoError(t, err)
	require.Equal(t, []pluginc.Requirement{
		{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0, < 2.0"},
		{Provider: provider("host.invalid", "ns", "b"), Constraints: ""},
	}, reqs)

	_, err = Discover(tree, Unit{Manifest: filepath.Join(data, "missing.json"), Host: "host.invalid"})
	require.ErrorIs(t, err, os.ErrNotExist)

	writeTree(t, data, map[string]string{"modules/net/sub/main.tf": "terraform {"})
	_, err = Discover(tree, Unit{Manifest: manifest, Host: "host.invalid"})
	require.ErrorContains(t, err, `module "net.sub" (./sub)`)

	writeTree(t, data, map[string]string{"modules/modules.json": "{"})
	_, err = Discover(tree, Unit{Manifest: manifest, Host: "host.invalid"})
	require.ErrorContains(t, err, manifest)
}

// A module that does not parse, or a provider address that is not one,
// is an error, never a shorter list.
func TestDiscoverRefuses(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": "terraform {"})
	_, err := Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid"})
	require.ErrorContains(t, err, "main.tf")

	dir = t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": requires(map[string]string{"bad": `{ source = "example.invalid/ns/bad_type!" }`})})
	_, err = Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid"})
	require.ErrorIs(t, err, pluginc.ErrInvalidProvider)
	require.ErrorContains(t, err, `provider "bad"`)
}

func TestQualify(t *testing.T) {
	for src, want := range map[string]string{
		"aws":                    "host.invalid/hashicorp/aws",
		"acme/thing":             "host.invalid/acme/thing",
		"example.invalid/ns/typ": "example.invalid/ns/typ",
	} {
		require.Equal(t, want, qualify(src, "host.invalid"), src)
	}
}

func TestIsBuiltIn(t *testing.T) {
	for src, want := range map[string]bool{
		"terraform":                      true,
		"terraform.io/builtin/terraform": true,
		"builtin/terraform":              false, // a namespace "builtin" on the default registry
		"hashicorp/terraform":            false,
		"aws":                            false,
		"example.invalid/ns/terraform":   false,
		"not a source":                   false,
	} {
		require.Equal(t, want, isBuiltIn(src), src)
	}
}

// TestKeyBytes pins Key's bytes: one line per requirement, in the order
// given, "ADDRESS|CONSTRAINTS|LOCKED|HASH,HASH". Equal sets give equal
// keys, so every instance of a component shares one leader and one lock
// file; a set that differs in any field gets a key of its own.
func TestKeyBytes(t *testing.T) {
	reqs := []pluginc.Requirement{
		{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0, < 2.0", Locked: "1.2.3", LockedHashes: []string{"h1:AAAA=", "zh:0123"}},
		{Provider: provider("host.invalid", "hashicorp", "null")},
	}
	want := "example.invalid/ns/a|>= 1.0, < 2.0|1.2.3|h1:AAAA=,zh:0123\n" +
		"host.invalid/hashicorp/null|||\n"
	require.Equal(t, want, Key(reqs))
	require.Equal(t, "", Key(nil))

	same := []pluginc.Requirement{reqs[0], reqs[1]}
	same[0].LockedHashes = []string{"h1:AAAA=", "zh:0123"}
	require.Equal(t, Key(reqs), Key(same))
	keys := map[string]bool{Key(reqs): true}
	for _, change := range []func(r *pluginc.Requirement){
		func(r *pluginc.Requirement) { r.Provider.Type = "b" },
		func(r *pluginc.Requirement) { r.Constraints = ">= 1.0" },
		func(r *pluginc.Requirement) { r.Locked = "1.2.4" },
		func(r *pluginc.Requirement) { r.LockedHashes = []string{"h1:AAAA="} },
	} {
		other := []pluginc.Requirement{reqs[0], reqs[1]}
		change(&other[0])
		require.False(t, keys[Key(other)], Key(other))
		keys[Key(other)] = true
	}
}

// Two local names of one provider, each with its own constraint: every
// Discover of the component gives the same constraints in the same order,
// hence the same Key (instances of a component share one lock file).
func TestDiscoverSameKeyEveryTime(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf": requires(map[string]string{
			"b": `{ source = "example.invalid/ns/a", version = "< 2.0" }`,
			"a": `{ source = "example.invalid/ns/a", version = ">= 1.0" }`,
		}),
	})
	var keys []string
	for range 64 {
		reqs, err := Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid", Files: modtree.TerraformFiles})
		require.NoError(t, err)
		require.Equal(t, []pluginc.Requirement{{Provider: provider("example.invalid", "ns", "a"), Constraints: ">= 1.0, < 2.0"}}, reqs)
		keys = append(keys, Key(reqs))
	}
	require.Len(t, slices.Compact(keys), 1)
}

// TestGrammarOf: the provider address grammar per engine, as each
// engine's address library decides it (Terraform 1.11's
// terraform-registry-address v0.2.3, 1.15's v0.4.0, 1.16's v0.5.0 with
// ParseProviderNamespace; OpenTofu's own library, up to 1.12, has no
// underscore rule), and what Discover then does with each namespace
// under that engine: a component requiring registry.example.test/my_org/
// tfitest is discovered only where the engine accepts it, and a leading
// or trailing underscore is refused everywhere, the address named.
func TestGrammarOf(t *testing.T) {
	info := func(k engine.Kind, v string) engine.Info {
		if v == "" {
			return engine.Info{Kind: k}
		}
		return engine.Info{Kind: k, Version: version.Must(version.NewVersion(v))}
	}
	for _, tc := range []struct {
		e    engine.Info
		want pluginc.Grammar
	}{
		{info(engine.Terraform, "1.11.4"), pluginc.DashNamespaces},
		{info(engine.Terraform, "1.15.0"), pluginc.DashNamespaces},
		{info(engine.Terraform, "1.15.9"), pluginc.DashNamespaces},
		{info(engine.Terraform, "1.16.0-beta1"), pluginc.UnderscoreNamespaces},
		{info(engine.Terraform, "1.16.0"), pluginc.UnderscoreNamespaces},
		{info(engine.Terraform, "1.17.2"), pluginc.UnderscoreNamespaces},
		{info(engine.Terraform, ""), pluginc.DashNamespaces},
		{info(engine.OpenTofu, "1.10.6"), pluginc.DashNamespaces},
		{info(engine.OpenTofu, "1.12.6"), pluginc.DashNamespaces},
		{info(engine.OpenTofu, "1.16.0"), pluginc.DashNamespaces},
	} {
		g := GrammarOf(tc.e)
		require.Equal(t, tc.want, g, "%s %v", tc.e.Kind, tc.e.Version)

		for ns, ok := range map[string]bool{
			"my-org": true,
			"my_org": g == pluginc.UnderscoreNamespaces,
			"a_b-c":  g == pluginc.UnderscoreNamespaces,
			"_org":   false,
			"org_":   false,
			"-org":   false,
		} {
			addr := "registry.example.test/" + ns + "/tfitest"
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"main.tf": requires(map[string]string{"tfitest": `{ source = "` + addr + `" }`})})
			reqs, err := Discover(modtree.Walk(dir, modtree.TerraformFiles), Unit{Host: "host.invalid", Grammar: g})
			if !ok {
				require.ErrorIs(t, err, pluginc.ErrInvalidProvider, "%s %v, %s", tc.e.Kind, tc.e.Version, addr)
				require.ErrorContains(t, err, `"`+addr+`"`)
				continue
			}
			require.NoError(t, err, "%s %v, %s", tc.e.Kind, tc.e.Version, addr)
			require.Equal(t, []pluginc.Requirement{{Provider: provider("registry.example.test", ns, "tfitest"), Constraints: ""}}, reqs)
		}
	}
}
