package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modinstall"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/workdir"
)

// Variables go to init and get only for an engine that evaluates them
// early (earlyeval.RulesOf decides which): to workspace select under
// OpenTofu only (Terraform refuses -var there); to validate and show of
// a saved plan under both. forEngine sets the rules on a copy.
func TestEarlyVarArgs(t *testing.T) {
	eng := func(k engine.Kind, v string) engine.Info {
		return engine.Info{Kind: k, Version: version.Must(version.NewVersion(v))}
	}
	tofu := func(v string) engine.Info { return eng(engine.OpenTofu, v) }
	tf := func(v string) engine.Info { return eng(engine.Terraform, v) }

	a := Args{Vars: map[string]string{"b": "2", "a": "1"}, VarFiles: []string{"x.tfvars"}, Targets: []string{"t.x"}}
	vars := []string{"-var-file=x.tfvars", "-var", "a=1", "-var", "b=2"}
	for _, e := range []engine.Info{tofu("1.10.6"), tf("1.16.0")} {
		units := forEngine([]Unit{{Args: a}}, e)
		require.Equal(t, earlyeval.Rules{}, a.early, "the caller's units are not changed")
		early := units[0].Args
		require.Equal(t, append([]string{"init", "-input=false", "-no-color", "-reconfigure"}, vars...), early.initCmd(true).Args, "%s", e)
		require.Equal(t, append([]string{"get", "-no-color", "-update"}, vars...), early.getCmd(true).Args, "%s", e)
		require.Equal(t, append([]string{"validate", "-no-color"}, vars...), early.validateCmd().Args, "%s", e)
		require.Equal(t, append(append([]string{"show", "-json", "-no-color"}, vars...), "p"), early.showPlanCmd("p").Args, "%s", e)
		require.Equal(t, string(e.Kind), string(units[0].Workdir.Engine))
		ws := []string{"workspace", "select", "-or-create=true", "--", "blue"}
		if e.Kind == engine.OpenTofu {
			ws = append(append([]string{"workspace", "select", "-or-create=true"}, vars...), "--", "blue")
		}
		require.Equal(t, ws, early.workspaceCmd("blue").Args, "%s", e)
	}

	for _, e := range []engine.Info{tofu("1.7.3"), tf("1.11.4"), tf("1.14.9")} {
		plain := forEngine([]Unit{{Args: a}}, e)[0].Args
		require.Equal(t, []string{"init", "-input=false", "-no-color"}, plain.initCmd(false).Args, "%s", e)
		require.Equal(t, []string{"get", "-no-color"}, plain.getCmd(false).Args, "%s", e)
		require.Equal(t, []string{"workspace", "select", "-or-create=true", "--", "blue"}, plain.workspaceCmd("blue").Args, "%s", e)
		require.Equal(t, []string{"validate", "-no-color"}, plain.validateCmd().Args, "%s", e)
	}
}

// The backend fingerprint (the init record's Backend) changes when the
// backend changes in a .tofu or .tofu.json file, and, with early
// evaluation, when a variable the backend reads gets another value from
// Args.Vars, Args.VarFiles, TF_VAR_* or an auto-loaded tfvars file, or
// another default, also through a local; it does not change for a value
// the backend does not read. Under terraform's rule .tofu files are not
// read at all.
func TestBackendFingerprintSeesTofuAndVariables(t *testing.T) {
	fp := func(t *testing.T, dir string, rule modtree.Files, early bool, a Args, env map[string]string) string {
		t.Helper()
		root, err := readRootConfigAt(dir, rule, early, a, env)
		require.NoError(t, err)
		return backendFingerprint(root, dir, a.BackendConfig)
	}
	t.Run("tofu files", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{
			"main.tf":    `resource "terraform_data" "x" {}`,
			"backend.tf": "terraform {\n  backend \"local\" { path = \"a.tfstate\" }\n}",
		})
		tf := fp(t, dir, modtree.TerraformFiles, false, Args{}, nil)
		require.NotEmpty(t, tf)
		require.Equal(t, tf, fp(t, dir, modtree.TofuFiles, true, Args{}, nil))

		// backend.tofu hides backend.tf from OpenTofu only.
		writeTree(t, dir, map[string]string{"backend.tofu": "terraform {\n  backend \"local\" { path = \"b.tfstate\" }\n}"})
		require.Equal(t, tf, fp(t, dir, modtree.TerraformFiles, false, Args{}, nil), "a .tofu file changes nothing for terraform")
		b := fp(t, dir, modtree.TofuFiles, true, Args{}, nil)
		require.NotEqual(t, tf, b)
		writeTree(t, dir, map[string]string{"backend.tofu": "terraform {\n  backend \"local\" { path = \"c.tfstate\" }\n}"})
		c := fp(t, dir, modtree.TofuFiles, true, Args{}, nil)
		require.NotEqual(t, b, c, "a backend change made in a .tofu file")

		require.NoError(t, os.Remove(filepath.Join(dir, "backend.tofu")))
		writeTree(t, dir, map[string]string{"backend.tofu.json": `{"terraform": {"backend": {"local": {"path": "d.tfstate"}}}}`})
		d := fp(t, dir, modtree.TofuFiles, true, Args{}, nil)
		require.NotEqual(t, tf, d, "backend.tofu.json is read as JSON and adds to backend.tf")
		writeTree(t, dir, map[string]string{"backend.tofu.json": `{"terraform": {"backend": {"local": {"path": "e.tfstate"}}}}`})
		require.NotEqual(t, d, fp(t, dir, modtree.TofuFiles, true, Args{}, nil), "a backend change made in a .tofu.json file")
	})
	t.Run("variables", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{
			"main.tofu": `
variable "env" {
  type    = string
  default = "dev"
}
variable "other" { default = "x" }
locals { state = "states/${var.env}.tfstate" }
terraform {
  backend "local" { path = local.state }
}`,
			"prod.tfvars": `env = "prod"`,
			"qa.tfvars":   `env = "qa"`,
		})
		base := fp(t, dir, modtree.TofuFiles, true, Args{}, nil)
		require.NotEmpty(t, base)
		distinct := map[string]string{"default": base}
		for name, in := range map[string]struct {
			a   Args
			env map[string]string
		}{
			"Args.Vars":     {Args{Vars: map[string]string{"env": "prod"}}, nil},
			"Args.VarFiles": {Args{VarFiles: []string{"qa.tfvars"}}, nil},
			"TF_VAR_env":    {Args{}, map[string]string{"TF_VAR_env": "stage"}},
		} {
			got := fp(t, dir, modtree.TofuFiles, true, in.a, in.env)
			for other, v := range distinct {
				require.NotEqual(t, v, got, "%s gives the same fingerprint as %s", name, other)
			}
			distinct[name] = got
		}
		// Precedence: a -var wins over TF_VAR_ and var files, as in the engine.
		require.Equal(t, distinct["Args.Vars"], fp(t, dir, modtree.TofuFiles, true,
			Args{Vars: map[string]string{"env": "prod"}, VarFiles: []string{"qa.tfvars"}}, map[string]string{"TF_VAR_env": "stage"}))
		// A value the backend does not read changes nothing.
		require.Equal(t, base, fp(t, dir, modtree.TofuFiles, true, Args{Vars: map[string]string{"other": "y"}}, map[string]string{"TF_VAR_other": "z"}))
		// Without early evaluation the values are not read.
		require.Equal(t, fp(t, dir, modtree.TofuFiles, false, Args{}, nil), fp(t, dir, modtree.TofuFiles, false, Args{Vars: map[string]string{"env": "prod"}}, nil))
		// An auto-loaded file, and another default.
		writeTree(t, dir, map[string]string{"x.auto.tfvars.json": `{"env": "auto"}`})
		auto := fp(t, dir, modtree.TofuFiles, true, Args{}, nil)
		require.NotEqual(t, base, auto)
		require.NoError(t, os.Remove(filepath.Join(dir, "x.auto.tfvars.json")))
		require.Equal(t, base, fp(t, dir, modtree.TofuFiles, true, Args{}, nil))
		main, err := os.ReadFile(filepath.Join(dir, "main.tofu"))
		require.NoError(t, err)
		writeTree(t, dir, map[string]string{"main.tofu": string(main) + "\n# the default moves to a file of its own\n"})
		require.Equal(t, base, fp(t, dir, modtree.TofuFiles, true, Args{}, nil), "a change elsewhere in the file is not a backend change")
	})
}

// A module source built from a variable keys the module fetch by what it
// evaluates to: two units giving the variable different values never
// share one, two giving it the same value do.
func TestModuleKeyDynamicSource(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tofu": `
variable "flavor" { type = string }
module "m" { source = "./mods/${var.flavor}" }
module "fixed" { source = "./mods/a" }`})
	tree := modtree.Walk(dir, modtree.TofuFiles)
	keyOf := func(tree *modtree.Tree, component string, vars map[string]string) (string, bool) {
		root, err := readRootConfigAt(dir, modtree.TofuFiles, true, Args{Vars: vars}, nil)
		require.NoError(t, err)
		x := &unitRun{tree: tree, u: &Unit{Workdir: workdir.Spec{Source: component}}}
		return modinstall.Key(tree, x.dynamicCall(root.early))
	}
	key := func(vars map[string]string) (string, bool) { return keyOf(tree, dir, vars) }
	a, remote := key(map[string]string{"flavor": "a"})
	require.True(t, remote, "a dynamic source not evaluated is resolved by tofu get, not followed as local")
	b, _ := key(map[string]string{"flavor": "b"})
	a2, _ := key(map[string]string{"flavor": "a", "unrelated": "z"})
	require.NotEqual(t, a, b)
	require.Equal(t, a, a2)
	other, _ := keyOf(tree, "/elsewhere/components/other", map[string]string{"flavor": "a"})
	require.NotEqual(t, a, other, "a source not evaluated may name a dir of its own component: never shared with another")

	// Evaluated to a local dir (Spec.ModuleSources): followed, not fetched.
	evaluated := modtree.WalkWith(dir, modtree.TofuFiles, map[string]string{"m": "./mods/a"})
	_, remote = keyOf(evaluated, dir, map[string]string{"flavor": "a"})
	require.False(t, remote)
}
