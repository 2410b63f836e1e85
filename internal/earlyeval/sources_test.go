package earlyeval

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/testenv"
)

// ModuleSources evaluates the root module's dynamic module sources the
// way the engine does at init: a variable's value from Given.Vars over a
// var file over TF_VAR_* over its default, a generated auto.tfvars file,
// a local built from a variable, path.module; and names, with its file
// and line, a source it cannot evaluate (a function, a variable with no
// value) instead of guessing.
func TestModuleSourcesEvaluated(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"main.tf": `
variable "a" { default = "dflt" }
variable "b" {}
variable "c" {}
variable "d" {}
variable "e" {}
locals { base = "../../modules" }
module "by_default" { source = "../../modules/${var.a}" }
module "by_var"     { source = "${local.base}/${var.b}" }
module "by_path"    { source = "${path.module}/../shared/${var.c}" }
module "by_auto"    { source = "./mods/${var.d}" }
module "by_env"     { source = var.e }
module "literal"    { source = "./literal" }
module "func"       { source = lower("./X") }
module "unset"      { source = "./${var.nope}" }
`,
		"vars.tfvars": `b = "from-file"` + "\n",
	})
	cfs, err := modtree.ReadConfig(dir, nil, modtree.TerraformFiles)
	require.NoError(t, err)
	g := Given{
		Vars:     map[string]string{"c": "from-var"},
		VarFiles: []string{"vars.tfvars"},
		Env:      map[string]string{"TF_VAR_e": "./from-env", "TF_VAR_c": "loses-to-var", "TF_VAR_b": "loses-to-file"},
	}
	overlay := map[string][]byte{"gen.auto.tfvars.json": []byte(`{"d": "from-generated"}`)}
	got, unknown := New(cfs, dir, overlay, g).ModuleSources()
	require.Equal(t, map[string]string{
		"by_default": "../../modules/dflt",
		"by_var":     "../../modules/from-file",
		"by_path":    "./../shared/from-var",
		"by_auto":    "./mods/from-generated",
		"by_env":     "./from-env",
	}, got)
	require.Len(t, unknown, 2)
	require.Regexp(t, `main\.tf:14: module "func" source: .*`, unknown[0])
	require.Regexp(t, `main\.tf:15: module "unset" source: .*`, unknown[1])
}

// FromSource reads the component as the workdir will hold it: a
// generated file in place of the component's own, a generated variable
// file loaded like the component's; a file in a subdirectory is not a
// root module file. A missing source is an error.
func TestFromSource(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"main.tf":          `module "m" { source = "./mods/${var.which}" }` + "\nvariable \"which\" {}\n",
		"terraform.tfvars": `which = "own"`,
	})
	got, unknown := must(FromSource(dir, nil, modtree.TerraformFiles, Given{})).ModuleSources()
	require.Empty(t, unknown)
	require.Equal(t, map[string]string{"m": "./mods/own"}, got)

	files := map[string][]byte{
		"main.tf":          []byte(`module "g" { source = "./gen/${var.which}" }` + "\nvariable \"which\" {}\n"),
		"terraform.tfvars": []byte(`which = "generated"`),
		"sub/extra.tf":     []byte(`module "x" { source = "./${var.which}" }`),
	}
	got, unknown = must(FromSource(dir, files, modtree.TerraformFiles, Given{})).ModuleSources()
	require.Empty(t, unknown)
	require.Equal(t, map[string]string{"g": "./gen/generated"}, got)

	_, err := FromSource(filepath.Join(dir, "missing"), nil, modtree.TerraformFiles, Given{})
	require.Error(t, err)
}

// HasDynamicSources sees a root module's call whose source is an
// expression, by the engine's file rule, and not one in a child module.
func TestHasDynamicSources(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"static/main.tf":  `module "c" { source = "../child" }`,
		"child/main.tf":   `module "d" { source = "./${var.x}" }`,
		"dynamic/main.tf": `module "d" { source = "../${var.x}" }`,
		"tofu/main.tf":    `output "o" { value = 1 }`,
		"tofu/mods.tofu":  `module "d" { source = "../${var.x}" }`,
	})
	require.False(t, HasDynamicSources(filepath.Join(repo, "static"), modtree.TerraformFiles))
	require.True(t, HasDynamicSources(filepath.Join(repo, "dynamic"), modtree.TerraformFiles))
	require.False(t, HasDynamicSources(filepath.Join(repo, "tofu"), modtree.TerraformFiles))
	require.True(t, HasDynamicSources(filepath.Join(repo, "tofu"), modtree.TofuFiles))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
