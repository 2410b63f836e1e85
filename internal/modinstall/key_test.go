package modinstall

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// TestKey: the module store's key of a tree; its text is pinned, since a
// changed key refetches every stored set.
func TestKey(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		}
		return filepath.Join(dir, "c")
	}
	key := func(dir string) (string, bool) { return Key(modtree.Walk(dir, modtree.TerraformFiles), nil) }
	nested := map[string]string{
		"c/main.tf": `module "net" { source = "../modules/net" }`,
		"modules/net/a.tf": `module "vpc" {
  source  = "example.test/acme/vpc/aws"
  version = "~> 1.0"
}`,
	}
	k, remote := key(write(t, nested))
	require.True(t, remote, "a remote call inside a local module counts")
	require.Equal(t, "net\t../modules/net\t\nnet.vpc\texample.test/acme/vpc/aws\t~> 1.0", k)

	again, _ := key(write(t, nested))
	require.Equal(t, k, again, "the same component elsewhere has the same key")

	moved := map[string]string{
		"c/main.tf":  `module "net" { source = "./net" }`,
		"c/net/a.tf": nested["modules/net/a.tf"],
	}
	other, remote := key(write(t, moved))
	require.True(t, remote)
	require.NotEqual(t, k, other, "another local layout is another key")

	_, remote = key(write(t, map[string]string{
		"c/main.tf":   `module "x" { source = "./x" }`,
		"c/x/main.tf": `output "o" { value = 1 }`,
	}))
	require.False(t, remote, "local modules only")

	_, remote = key(write(t, map[string]string{"c/main.tf": `module "self" { source = "./" }`}))
	require.False(t, remote, "a cycle ends the walk")
}

// TestKeyDynamic: a call built from variables is keyed by its text and
// what dyn says its value depends on; without dyn, by its text alone.
func TestKeyDynamic(t *testing.T) {
	tree := &modtree.Tree{Calls: []modtree.Call{
		{Key: "m", Source: "./mods/${var.flavor}", Dynamic: true},
		{Key: "fixed", Source: "./mods/a", Local: true},
	}}
	k, remote := Key(tree, func(c modtree.Call) string { return "early " + c.Key })
	require.True(t, remote, "a dynamic source is not followed as local")
	require.Equal(t, "fixed\t./mods/a\t\nm\t./mods/${var.flavor}\t\tearly m", k)
	k, _ = Key(tree, nil)
	require.Equal(t, "fixed\t./mods/a\t\nm\t./mods/${var.flavor}\t", k)
}

// TestKeyNeverHoldsAnEvaluatedSource: a source the caller evaluated is
// keyed by its text and a digest of its value: the key (logged, and kept
// in the module store's records) never holds the value, a token in it
// included, and two values are two keys.
func TestKeyNeverHoldsAnEvaluatedSource(t *testing.T) {
	const token = "tok3n-in-a-url"
	call := func(v string) *modtree.Tree {
		return &modtree.Tree{Calls: []modtree.Call{{Key: "m", Name: "m", Dynamic: true,
			SourceExpr: `"git::https://x:${var.token}@example.invalid/r.git"`, Source: "git::https://x:" + v + "@example.invalid/r.git"}}}
	}
	k, remote := Key(call(token), nil)
	require.True(t, remote)
	require.NotContains(t, k, token)
	require.Contains(t, k, "${var.token}")
	other, _ := Key(call(token+"2"), nil)
	require.NotEqual(t, k, other, "another value, another key")
	again, _ := Key(call(token), nil)
	require.Equal(t, k, again)
}
