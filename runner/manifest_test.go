package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

func TestModuleKey(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		}
		return filepath.Join(dir, "c")
	}
	moduleKey := func(dir string) (string, bool) { return moduleKey(modtree.Walk(dir, modtree.TerraformFiles), nil) }
	nested := map[string]string{
		"c/main.tf": `module "net" { source = "../modules/net" }`,
		"modules/net/a.tf": `module "vpc" {
  source  = "example.test/acme/vpc/aws"
  version = "~> 1.0"
}`,
	}
	key, remote := moduleKey(write(t, nested))
	require.True(t, remote, "a remote call inside a local module counts")
	require.Equal(t, "net\t../modules/net\t\nnet.vpc\texample.test/acme/vpc/aws\t~> 1.0", key)

	again, _ := moduleKey(write(t, nested))
	require.Equal(t, key, again, "the same component elsewhere has the same key")

	moved := map[string]string{
		"c/main.tf":  `module "net" { source = "./net" }`,
		"c/net/a.tf": nested["modules/net/a.tf"],
	}
	other, remote := moduleKey(write(t, moved))
	require.True(t, remote)
	require.NotEqual(t, key, other, "another local layout is another key")

	_, remote = moduleKey(write(t, map[string]string{
		"c/main.tf":   `module "x" { source = "./x" }`,
		"c/x/main.tf": `output "o" { value = 1 }`,
	}))
	require.False(t, remote, "local modules only")

	_, remote = moduleKey(write(t, map[string]string{"c/main.tf": `module "self" { source = "./" }`}))
	require.False(t, remote, "a cycle ends the walk")
}

func TestRebaseManifest(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the manifest below uses Unix absolute paths")
	}
	origin, work, dst := filepath.FromSlash("/w/a/data/modules"), filepath.FromSlash("/w/a/src/c"), filepath.FromSlash("/w/b/data/modules")
	in := `{"Modules":[
{"Key":"","Source":"","Dir":"."},
{"Key":"net","Source":"./net","Dir":"net"},
{"Key":"redis","Source":"https://127.0.0.1:1/m.zip","Dir":"/w/a/data/modules/redis","Extra":[1]},
{"Key":"redis.sub","Source":"./sub","Dir":"/w/a/data/modules/redis/sub"},
{"Key":"rel","Source":"https://127.0.0.1:1/r.zip","Dir":"../../data/modules/rel"}]}`
	out, err := rebaseManifest([]byte(in), origin, work, dst)
	require.NoError(t, err)
	recs, err := parseManifest(out)
	require.NoError(t, err)
	dirs := map[string]string{}
	for _, r := range recs {
		dirs[r.Key] = r.Dir
	}
	require.Equal(t, map[string]string{
		"": ".", "net": "net",
		"redis":     "/w/b/data/modules/redis",
		"redis.sub": "/w/b/data/modules/redis/sub",
		"rel":       "/w/b/data/modules/rel",
	}, dirs)
	var raw struct{ Modules []map[string]json.RawMessage }
	require.NoError(t, json.Unmarshal(out, &raw))
	require.JSONEq(t, `[1]`, string(raw.Modules[2]["Extra"]), "unknown fields are kept")

	reordered := `{"Modules":[
{"Key":"rel","Source":"https://127.0.0.1:1/r.zip","Dir":"/w/b/data/modules/rel"},
{"Key":"redis.sub","Source":"./sub","Dir":"/w/b/data/modules/redis/sub/"},
{"Key":"redis","Source":"https://127.0.0.1:1/m.zip","Dir":"/w/b/data/modules/redis"},
{"Key":"net","Source":"./net","Dir":"net"},
{"Key":"","Source":"","Dir":"."}]}`
	require.True(t, sameManifest(out, []byte(reordered)))
	require.False(t, sameManifest(out, []byte(in)), "Dirs into another data dir differ")
	require.False(t, sameManifest(out, []byte("{")))

	_, err = rebaseManifest([]byte("not json"), origin, work, dst)
	require.ErrorContains(t, err, "parse modules.json")
}
