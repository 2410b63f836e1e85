package earlyeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// ModuleSources evaluates the root module's dynamic module sources the
// way the engine does at init (here OpenTofu's rule, which takes every
// variable that is not sensitive): a variable's value from Given.Vars
// over a var file over TF_VAR_* over its default, a generated
// auto.tfvars file, a local built from a variable, path.module, a
// function the engine has, file of a file inside the component (a
// generated one included); and names, with its file and line, a source
// it cannot evaluate (an impure function, file of a path outside the
// component or under ~, a variable with no value, try swallowing what is
// unknown here) instead of guessing.
func TestModuleSourcesEvaluated(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"main.tf": `
variable "a" { default = "dflt" }
variable "b" {}
variable "c" {}
variable "d" {}
variable "e" {}
variable "n" { type = number }
variable "f" { type = any }
variable "v" { type = any }
locals { base = "../../modules" }
module "by_default" { source = "../../modules/${var.a}" }
module "by_var"     { source = "${local.base}/${var.b}" }
module "by_path"    { source = "${path.module}/../shared/${var.c}" }
module "by_auto"    { source = "./mods/${var.d}" }
module "by_env"     { source = var.e }
module "by_number"  { source = "./n${var.n}" }
module "file_any"   { source = "./f${var.f}" }
module "var_any"    { source = "./v${var.v}" }
module "literal"    { source = "./literal" }
module "func"       { source = lower("./X") }
module "unset"      { source = "./${var.nope}" }
module "impure"     { source = "./${uuid()}" }
module "file"       { source = file("src.txt") }
module "gen_file"   { source = file("${path.module}/gen.txt") }
module "outside"    { source = file("../outside.txt") }
module "home"       { source = file("~/src.txt") }
module "try"        { source = try("./${path.cwd}", "./guess") }
`,
		"vars.tfvars": `b = "from-file"` + "\n" + `f = "01"` + "\n",
		"src.txt":     "./from-file",
	})
	cfs, err := modtree.ReadConfig(dir, nil, modtree.TerraformFiles)
	require.NoError(t, err)
	g := Given{
		Vars:     map[string]string{"c": "from-var", "n": "01", "v": "01"},
		VarFiles: []string{"vars.tfvars"},
		Env:      map[string]string{"TF_VAR_e": "./from-env", "TF_VAR_c": "loses-to-var", "TF_VAR_b": "loses-to-file"},
	}
	overlay := map[string][]byte{"gen.auto.tfvars.json": []byte(`{"d": "from-generated"}`), "gen.txt": []byte("./from-generated-file")}
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.txt"), []byte("./outside"), 0o644))
	got, unknown := New(cfs, dir, overlay, g).ModuleSources(Rules{Eval: EvalStatic})
	require.Equal(t, map[string]string{
		"by_default": "../../modules/dflt",
		"by_var":     "../../modules/from-file",
		"by_path":    "./../shared/from-var",
		"by_auto":    "./mods/from-generated",
		"by_env":     "./from-env",
		"by_number":  "./n1",  // converted to its type first, as the engine does
		"file_any":   "./f01", // a var file's string stays one
		"var_any":    "./v1",  // a -var of a type that is not primitive is parsed as an expression
		"func":       "./x",
		"file":       "./from-file", // a file inside the directory the engine runs in
		"gen_file":   "./from-generated-file",
	}, got)
	require.Len(t, unknown, 5, "%q", unknown)
	for i, m := range []string{`main\.tf:21: module "unset"`, `main\.tf:22: module "impure"`, `main\.tf:25: module "outside"`, `main\.tf:26: module "home"`, `main\.tf:27: module "try"`} {
		require.Regexp(t, m+` source: .+`, unknown[i])
	}
}

// Each engine's rule decides which variables a source may read: under
// Terraform's (EvalConst) only a const variable, so a source reading a
// variable that is not const, directly or through a local, or a
// sensitive or ephemeral one, is not evaluated, and the reason names the variable and
// never holds its value; under OpenTofu's (EvalStatic) any variable but
// a sensitive or ephemeral one; under an engine that evaluates nothing
// early, nothing.
func TestModuleSourcesByEngineRule(t *testing.T) {
	const secret = "s3cr3t-t0ken"
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"main.tf": `
variable "name" {
  type  = string
  const = true
}
variable "plain" { type = string }
variable "token" {
  type      = string
  sensitive = true
}
variable "eph" {
  type      = string
  const     = true
  ephemeral = true
}
locals { url = "git::https://x:${var.token}@example.invalid/r.git" }
module "by_const" { source = "../../modules/${lower(var.name)}" }
module "by_plain" { source = "../../modules/${var.plain}" }
module "by_token" { source = "git::https://x:${var.token}@example.invalid/r.git" }
module "by_local" { source = local.url }
module "by_eph"   { source = "./${var.eph}" }
`})
	in := inputsOf(t, dir, modtree.TerraformFiles, Given{Vars: map[string]string{"name": "NET", "plain": "blue", "token": secret, "eph": secret}})
	reasons := func(unknown []string) string {
		joined := strings.Join(unknown, "\n")
		require.NotContains(t, joined, secret, "a reason never holds a value")
		return joined
	}

	got, unknown := in.ModuleSources(Rules{Eval: EvalConst})
	require.Equal(t, map[string]string{"by_const": "../../modules/net"}, got)
	r := reasons(unknown)
	require.Len(t, unknown, 4)
	require.Regexp(t, `module "by_plain" source: var\.plain is not const`, r)
	require.Regexp(t, `module "by_eph" source: var\.eph is ephemeral`, r)
	require.Regexp(t, `module "by_token" source: var\.token is sensitive`, r)
	require.Regexp(t, `module "by_local" source: var\.token is sensitive`, r)
	require.Equal(t, unknown, in.Refused(Rules{Eval: EvalConst}), "each one the engine's own refusal")

	got, unknown = in.ModuleSources(Rules{Eval: EvalStatic})
	require.Equal(t, map[string]string{"by_const": "../../modules/net", "by_plain": "../../modules/blue"}, got)
	r = reasons(unknown)
	require.Len(t, unknown, 3)
	require.Regexp(t, `module "by_eph" source: var\.eph is ephemeral: OpenTofu refuses`, r)
	require.Regexp(t, `module "by_token" source: var\.token is sensitive: OpenTofu refuses`, r)
	require.Regexp(t, `module "by_local" source: var\.token is sensitive: OpenTofu refuses`, r)

	require.Equal(t, unknown, in.Refused(Rules{Eval: EvalStatic}))

	got, unknown = in.ModuleSources(Rules{})
	require.Nil(t, got)
	require.Len(t, unknown, 5)
	reasons(unknown)

	// A source that does not evaluate here but that the engine takes is
	// not a refusal.
	testenv.WriteTree(t, dir, map[string]string{"main.tf": `
variable "name" { type = string }
module "m" { source = "../../modules/${tostring(var.name)}" }
`})
	in = inputsOf(t, dir, modtree.TerraformFiles, Given{Vars: map[string]string{"name": "net"}})
	_, unknown = in.ModuleSources(Rules{Eval: EvalStatic})
	require.Len(t, unknown, 1)
	require.Empty(t, in.Refused(Rules{Eval: EvalStatic}))
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
	got, unknown := must(FromSource(dir, nil, modtree.TerraformFiles, Given{})).ModuleSources(Rules{Eval: EvalStatic})
	require.Empty(t, unknown)
	require.Equal(t, map[string]string{"m": "./mods/own"}, got)

	files := map[string][]byte{
		"main.tf":          []byte(`module "g" { source = "./gen/${var.which}" }` + "\nvariable \"which\" {}\n"),
		"terraform.tfvars": []byte(`which = "generated"`),
		"sub/extra.tf":     []byte(`module "x" { source = "./${var.which}" }`),
	}
	got, unknown = must(FromSource(dir, files, modtree.TerraformFiles, Given{})).ModuleSources(Rules{Eval: EvalStatic})
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

// SourceDirs names, for a source left to the engine whose known part
// (a function the engine has but that is not evaluated here taken as
// unknown; through a local and format too) starts with a local path
// outside the component, the directory that path names, where the engine
// will find its module; none for a source evaluated, one the engine
// refuses by its rule (a variable not const under Terraform), one inside
// the component, one calling a function no engine has, or one whose
// known part is not a local path.
func TestSourceDirs(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"main.tf": `
variable "name" {
  const = true
}
variable "plain" {}
locals { base = "../../modules" }
module "engine_fn" { source = "../../modules/${tostring(var.name)}" }
module "up"        { source = "../${tostring(var.name)}/x" }
module "evaluated" { source = "../../modules/${lower(var.name)}" }
module "refused"   { source = "../../modules/${tostring(var.plain)}" }
module "inside"    { source = "./mods/${tostring(var.name)}" }
module "by_local"  { source = "${local.base}/${tostring(var.name)}" }
module "by_format" { source = format("../../modules/%s", tostring(var.name)) }
module "fn_first"  { source = lower("../../modules/${var.name}") }
module "no_engine" { source = "../../modules/${nosuchfunc(var.name)}" }
module "fn_unknown" { source = tostring("../../modules/${var.name}") }
`})
	in := inputsOf(t, dir, modtree.TerraformFiles, Given{Vars: map[string]string{"name": "NET", "plain": "x"}})
	r := Rules{Eval: EvalConst}
	values, _ := in.ModuleSources(r)
	require.Equal(t, map[string]string{"evaluated": "../../modules/net", "fn_first": "../../modules/net"}, values)
	require.Equal(t, map[string]string{"engine_fn": "../../modules", "up": "..", "by_local": "../../modules", "by_format": "../../modules"},
		in.SourceDirs(r, values))
}
