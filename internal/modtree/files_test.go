package modtree

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Files.Select is OpenTofu's own rule (its configs loader's
// filterTfPathsWithTofuAlternatives) under TofuFiles and terraform's
// under TerraformFiles.
func TestFilesSelect(t *testing.T) {
	names := []string{
		"main.tf", "main.tofu", // the .tofu hides the .tf
		"net.tf.json", "net.tofu.json", // the .tofu.json hides the .tf.json
		"mixed.tf", "mixed.tofu.json", // other kinds: both read
		"only.tofu", "only.tofu.json", "plain.tf", "plain.tf.json",
		"override.tofu", "override.tf", "x_override.tofu.json",
		".hidden.tofu", "backup.tofu~", "#emacs.tofu#", "vars.tfvars", "test.tftest.hcl", "main.tofutest.hcl",
		".tf", ".tofu", "sub/inner.tofu", "README.md",
	}
	require.Equal(t, []string{"main.tf", "mixed.tf", "net.tf.json", "override.tf", "plain.tf", "plain.tf.json"},
		TerraformFiles.Select(names))
	require.Equal(t, []string{"main.tofu", "mixed.tf", "mixed.tofu.json", "net.tofu.json", "only.tofu", "only.tofu.json",
		"override.tofu", "plain.tf", "plain.tf.json", "x_override.tofu.json"},
		TofuFiles.Select(names))
	require.True(t, isOverride("override.tofu"))
	require.True(t, isOverride("x_override.tofu.json"))
	require.False(t, isOverride("main.tofu"))
	require.Equal(t, "tofu", TofuFiles.String())
	require.Equal(t, "terraform", Files(0).String(), "the zero value is terraform's rule")
}

// A module called only from a .tofu file is followed under TofuFiles and
// not under TerraformFiles; a .tofu file replaces its .tf twin (its calls,
// not the twin's, are followed); .tofu.json files are read as JSON; and
// what the walk reports names the real files.
func TestWalkTofuFiles(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"c/main.tf":                `module "old" { source = "../modules/old" }`,
		"c/main.tofu":              `module "new" { source = "../modules/new" }`,
		"c/net.tofu":               `module "net" { source = "../modules/net" }`,
		"c/db.tofu.json":           `{"module": {"db": {"source": "../modules/db"}}}`,
		"c/versions.tofu":          "terraform {\n  required_providers {\n    tfitest = { source = \"example.invalid/ns/tfitest\" }\n  }\n}",
		"c/broken.tofu":            `resource "x" {`,
		"modules/old/main.tf":      `output "o" { value = 1 }`,
		"modules/new/main.tofu":    `output "o" { value = 1 }`,
		"modules/net/main.tf":      `module "deep" { source = "./deep" }`,
		"modules/net/deep/main.tf": `output "o" { value = 1 }`,
		"modules/db/main.tf":       `output "o" { value = 1 }`,
	})
	root := filepath.Join(base, "c")

	tr := Walk(root, TerraformFiles)
	require.NoError(t, tr.Err(), "terraform reads no .tofu file")
	require.Equal(t, []string{"old"}, keys(tr.Calls))

	tr = Walk(root, TofuFiles)
	require.Equal(t, []string{"db", "net", "net.deep", "new"}, keys(tr.Calls))
	require.Equal(t, filepath.Join(base, "modules", "net"), call(t, tr, "net").Dir)
	require.Contains(t, tr.LocalDirs(), filepath.Join(base, "modules", "net", "deep"))
	require.NotContains(t, tr.LocalDirs(), filepath.Join(base, "modules", "old"), "main.tf is hidden by main.tofu")
	rm := tr.Modules[root]
	require.Equal(t, "example.invalid/ns/tfitest", rm.Config.RequiredProviders["tfitest"].Source)
	require.Equal(t, filepath.Join(root, "net.tofu"), rm.Config.ModuleCalls["net"].Pos.Filename)
	require.ErrorIs(t, rm.Err, ErrParse)
	require.Contains(t, rm.Err.Error(), "broken.tofu", "errors name the real file")
}

// ReadBackend and RemoteStatePaths follow the rule: a backend declared in
// backend.tofu is seen by OpenTofu's rule only, and replaces the one in
// backend.tf; generated files may be .tofu files too.
func TestReadBackendTofu(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"backend.tf":       "terraform {\n  backend \"local\" {\n    path = \"tf.tfstate\"\n  }\n}",
		"backend.tofu":     "terraform {\n  backend \"local\" {\n    path = \"tofu.tfstate\"\n  }\n}",
		"remote.tofu.json": `{"data": {"terraform_remote_state": {"db": {"backend": "local", "config": {"path": "inputs/db.tfstate"}}}}}`,
	})
	b, err := ReadBackend(dir, nil, TerraformFiles)
	require.NoError(t, err)
	require.Equal(t, "tf.tfstate", b.StatePath())
	b, err = ReadBackend(dir, nil, TofuFiles)
	require.NoError(t, err)
	require.Equal(t, "tofu.tfstate", b.StatePath())
	require.Equal(t, filepath.Join(dir, "backend.tofu"), b.File)

	b, err = ReadBackend(dir, map[string][]byte{"backend.tofu.json": []byte(`{"terraform": {"backend": {"local": {"path": "gen.tfstate"}}}}`)}, TofuFiles)
	require.ErrorIs(t, err, ErrBackend, "backend.tofu and a generated backend.tofu.json both declare one")
	b, err = ReadBackend(dir, map[string][]byte{"backend.tofu": []byte(`terraform {
  backend "local" {
    path = "gen.tfstate"
  }
}`)}, TofuFiles)
	require.NoError(t, err)
	require.Equal(t, "gen.tfstate", b.StatePath(), "a generated file replaces the component's")

	got, err := RemoteStatePaths(dir, TerraformFiles)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = RemoteStatePaths(dir, TofuFiles)
	require.NoError(t, err)
	require.Equal(t, []string{"inputs/db.tfstate"}, got)
}

func TestDynamicExpr(t *testing.T) {
	for s, want := range map[string]bool{
		"var.src":                          true,
		`"./mods/${var.flavor}"`:           true,
		`"${local.base}/net"`:              true,
		`"${path.module}/../modules/net"`:  true,
		"path/module/aws":                  false,
		`lower("./X")`:                     true,
		`"./${lower("X")}"`:                true,
		"local.v":                          true,
		"./mods/a":                         false,
		"../../modules/net":                false,
		"hashicorp/consul/aws":             false,
		"var/local/aws":                    false,
		"registry.invalid/ns/name/aws":     false,
		"git::https://example.invalid/x":   false,
		"git::https://var.example/x.git":   false,
		"s3::https://s3.amazonaws.com/b/k": false,
		"~> 1.2":                           false,
		">= 1.0, < 2.0":                    false,
		"":                                 false,
	} {
		require.Equal(t, want, DynamicExpr(s), s)
	}
}

// A module source built from a variable is a dynamic call: listed, never
// local, never followed.
func TestWalkDynamicSource(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"c/main.tofu": `
variable "flavor" { type = string }
module "m" { source = "./mods/${var.flavor}" }
module "v" {
  source  = "registry.invalid/ns/name/aws"
  version = var.v
}`,
		"c/mods/a/main.tf": `output "o" { value = 1 }`,
	})
	tr := Walk(filepath.Join(base, "c"), TofuFiles)
	require.NoError(t, tr.Err())
	m := call(t, tr, "m")
	require.True(t, m.Dynamic)
	require.False(t, m.Local)
	require.Empty(t, m.Dir)
	require.Equal(t, `"./mods/${var.flavor}"`, m.Source)
	require.True(t, call(t, tr, "v").Dynamic)
	require.Len(t, tr.Modules, 1)
}
