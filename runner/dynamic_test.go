package runner

// Module sources and versions built from variables (early evaluation:
// OpenTofu 1.8, Terraform 1.15), through the runner and side by side with
// the plain engine on a copy of the same repository, under every engine of
// the matrix that evaluates them.

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// earlyEngines runs fn under every engine of the matrix that evaluates
// module sources from variables, and skips the others, saying why.
func earlyEngines(t *testing.T, fn func(t *testing.T, e testenv.Engine)) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		info, err := engine.Detect(testCtx(t), e.Path)
		require.NoError(t, err)
		if !earlyEvaluation(info) {
			t.Skipf("skipping: %s does not evaluate module sources from variables (OpenTofu 1.8, Terraform 1.15)", info)
		}
		fn(t, e)
	})
}

// constVar declares variable name as early evaluation needs it: Terraform
// takes only a `const` variable in a module source; OpenTofu has no such
// argument.
func constVar(e testenv.Engine, name string) string {
	if e.Kind == engine.Terraform {
		return "variable \"" + name + "\" {\n  type  = string\n  const = true\n}\n"
	}
	return "variable \"" + name + "\" {\n  type = string\n}\n"
}

// TestFloatingModuleVersion: a registry module's version from a variable.
// One instance applies with "1.0.0" (the module store then holds 1.0.0
// for this component); another asks for ">= 1.0.0" and gets 2.0.0, what
// plain init of a fresh copy installs, never the store's 1.0.0 (the text
// `var.module_version` is the same for both: keying the store by it
// handed the second instance the first one's module). Again with the
// first value: 1.0.0, the store's set untouched by the second.
func TestFloatingModuleVersion(t *testing.T) {
	earlyEngines(t, func(t *testing.T, e testenv.Engine) {
		w := newUpgradeWorld(t, e)
		require.NoError(t, os.WriteFile(filepath.Join(w.src, "main.tf"), []byte(constVar(e, "module_version")+`
module "greet" {
  source  = "`+w.reg.ModuleSource("tfisolate", "greet", "tfitest")+`"
  version = var.module_version
}
output "version" { value = module.greet.version }
`), 0o644))
		w.publish(t, "2.0.0")
		r := w.runner(t, "")
		unit := func(instance, v string) Unit {
			u := w.unit(t, instance, false)
			u.Args.Vars = map[string]string{"module_version": v}
			return u
		}
		require.Equal(t, "1.0.0", w.apply(t, r, unit("pinned", "1.0.0")))
		require.Equal(t, "2.0.0", w.apply(t, r, unit("floating", ">= 1.0.0")), "the newest version the constraint allows, as a fresh init installs")

		// Plain engine, fresh copy, the same value.
		plain := copyOf(t, w.src)
		env := testenv.TerraformEnv(w.env["TF_CLI_CONFIG_FILE"])
		env = append(env, "SSL_CERT_FILE="+w.env["SSL_CERT_FILE"], "TF_DATA_DIR="+filepath.Join(plain, ".plain-data"))
		out, err := runEngine(testCtx(t), e.Path, plain, env, "init", "-input=false", "-no-color", "-var", "module_version=>= 1.0.0")
		require.NoError(t, err, out)
		out, err = runEngine(testCtx(t), e.Path, plain, env, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "module_version=>= 1.0.0")
		require.NoError(t, err, out)
		got, err := runEngine(testCtx(t), e.Path, plain, env, "output", "-raw", "version")
		require.NoError(t, err, got)
		require.Equal(t, "2.0.0", got, "plain %s", e.Name)

		require.Equal(t, "1.0.0", w.apply(t, r, unit("pinned-again", "1.0.0")), "the store's set for 1.0.0 is still 1.0.0")
	})
}

// stackRepo is the usual stack layout: a component whose module source is
// built from a variable pointing outside it, into a shared modules dir
// with two modules, each naming itself in a terraform_data resource.
func stackRepo(t *testing.T, e testenv.Engine, source string) (repo, src string) {
	t.Helper()
	repo = t.TempDir()
	src = filepath.Join(repo, "components", "app")
	writeTree(t, repo, map[string]string{
		"components/app/main.tf": constVar(e, "module_name") + `
module "net" {
  source = ` + source + `
}
resource "terraform_data" "app" { input = module.net.which }
`,
		"modules/blue/main.tf":  `output "which" { value = "blue" }` + "\n",
		"modules/green/main.tf": `output "which" { value = "green" }` + "\n",
	})
	return repo, src
}

// TestDynamicLocalSourceOutsideComponent: `source =
// "../../modules/${var.module_name}"` (and the same through a local and
// through path.module) in a component of a stack layout. The runner's
// plan equals the plain engine's on a copy of the repository given the
// same value; the workdir holds the module the value selects; another
// value re-prepares it with the other module; Affected names a unit for a
// change to the module its value selects and not for the other one.
func TestDynamicLocalSourceOutsideComponent(t *testing.T) {
	for _, tc := range []struct{ name, source string }{
		{"template", `"../../modules/${var.module_name}"`},
		{"path.module", `"${path.module}/../../modules/${var.module_name}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			earlyEngines(t, func(t *testing.T, e testenv.Engine) {
				repo, src := stackRepo(t, e, tc.source)
				w := newEngineWorld(t, e)
				r := w.runner(t)
				cli := filepath.Join(w.dir, "empty.tfrc")
				require.NoError(t, os.WriteFile(cli, nil, 0o644))

				u := w.unit(t, "app/"+e.Name, src, map[string]any{}, "app-"+e.Name)
				for _, which := range []string{"blue", "green"} {
					u.Args.Vars = map[string]string{"module_name": which}
					rep, err := r.Run(testCtx(t), SavePlan, u)
					require.NoError(t, err)
					res := rep.Results[0]
					require.Equal(t, Succeeded, res.Status, "%v\n%s", res.Err, readFile(t, res.Log))
					got := planChanges(t, []byte(readFile(t, res.Plan.JSONFile)))

					plain := copyOf(t, repo)
					plainSrc := filepath.Join(plain, "components", "app")
					for n, b := range u.Workdir.Files {
						require.NoError(t, os.WriteFile(filepath.Join(plainSrc, n), b, 0o644))
					}
					// The plain engine keeps its state beside the copy.
					require.NoError(t, os.Remove(filepath.Join(plainSrc, "backend.tf.json")))
					want := planChanges(t, plainPlan(t, e, plainSrc, testenv.TerraformEnv(cli), "-var", "module_name="+which))
					require.Equal(t, want, got, "the runner's plan and plain %s's", e.Name)
					require.Len(t, got, 1)
					require.Equal(t, which, got[0].After["input"])

					home, err := w.wd.Home(u.Workdir.Stack, u.Workdir.Instance)
					require.NoError(t, err)
					other := map[string]string{"blue": "green", "green": "blue"}[which]
					require.FileExists(t, filepath.Join(home, "src", "modules", which, "main.tf"), "the selected module is in the workdir, where the source reaches it")
					require.NoFileExists(t, filepath.Join(home, "src", "modules", other, "main.tf"), "only the selected module")

					ids, err := Affected([]Unit{u}, repo, "modules/"+which+"/main.tf")
					require.NoError(t, err)
					require.Equal(t, []string{u.id()}, ids, "a change to the selected module")
					ids, err = Affected([]Unit{u}, repo, "modules/"+other+"/main.tf")
					require.NoError(t, err)
					require.Empty(t, ids, "a change to the module the value does not select")
				}
			})
		})
	}
}

// sourceEngines runs fn under every engine of the matrix and under
// Terraform 1.15.0, the release that introduced module sources from
// variables.
func sourceEngines(t *testing.T, fn func(t *testing.T, e testenv.Engine)) {
	testenv.Engines(t, fn)
	t.Run(testenv.Terraform115.Name(), func(t *testing.T) { fn(t, testenv.Terraform115.Engine(t)) })
}

// engineErrors are the summaries of the error diagnostics an engine
// printed ("Error: Invalid module source" gives "Invalid module source").
func engineErrors(out string) []string {
	var s []string
	for _, m := range regexp.MustCompile(`(?m)^[│ ]*Error: (.+)$`).FindAllStringSubmatch(out, -1) {
		s = append(s, strings.TrimSpace(m[1]))
	}
	return s
}

// applySideBySide applies the component src of repo (a copy of it, with
// the unit's generated files but its backend) with the plain engine,
// `init -var ...` then `apply -var ...`, and the unit u through the
// runner (Apply), and requires the same answer: the same output "which"
// (the module the source selected), or both failing, the runner with
// every error the plain engine printed. It returns whether they applied.
func applySideBySide(t *testing.T, e testenv.Engine, r *Runner, repo, src string, u Unit) bool {
	t.Helper()
	rep, runErr := r.Run(testCtx(t), Apply, u) // a failed unit fails the Run: compared below
	require.NotNil(t, rep, "%v", runErr)
	res := rep.Results[0]

	rel, err := filepath.Rel(repo, src)
	require.NoError(t, err)
	plain := filepath.Join(copyOf(t, repo), rel)
	for n, b := range u.Workdir.Files {
		require.NoError(t, os.WriteFile(filepath.Join(plain, n), b, 0o644))
	}
	require.NoError(t, os.Remove(filepath.Join(plain, "backend.tf.json")), "the plain engine keeps its state beside the copy")
	cli := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	env := append(testenv.TerraformEnv(cli), "TF_DATA_DIR="+filepath.Join(plain, ".plain-data"))
	var vars []string
	for _, n := range slices.Sorted(maps.Keys(u.Args.Vars)) {
		vars = append(vars, "-var", n+"="+u.Args.Vars[n])
	}
	out, err := runEngine(testCtx(t), e.Path, plain, env, append([]string{"init", "-input=false", "-no-color"}, vars...)...)
	if err == nil {
		out, err = runEngine(testCtx(t), e.Path, plain, env, append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, vars...)...)
	}
	if err != nil {
		want := engineErrors(out)
		require.NotEmpty(t, want, "plain %s failed without an error diagnostic:\n%s", e.Name, out)
		require.Equal(t, Failed, res.Status, "the runner applied where plain %s failed:\n%s", e.Name, out)
		got := strings.Join(strings.Fields(fmt.Sprint(res.Err)+"\n"+fmt.Sprint(runErr)+"\n"+readFile(t, res.Log)), " ")
		for _, w := range want {
			require.Contains(t, got, strings.Join(strings.Fields(w), " "), "the runner failed otherwise than plain %s:\n%s", e.Name, out)
		}
		return false
	}
	require.NoError(t, runErr, "the runner failed where plain %s applied", e.Name)
	require.Equal(t, Succeeded, res.Status, "the runner failed where plain %s applied: %v\n%s", e.Name, res.Err, readFile(t, res.Log))
	want, err := runEngine(testCtx(t), e.Path, plain, env, "output", "-raw", "which")
	require.NoError(t, err, want)
	require.Equal(t, want, outputString(t, res, "which"), "the runner's module and plain %s's", e.Name)
	return true
}

// TestDynamicSourceByEngineRule: a component of a stack layout whose
// module source calls a function on a variable, `source =
// "../../modules/${lower(var.name)}"` with name = "NET", applies
// modules/net through the runner exactly where plain `init -var` and
// `apply -var` of a copy of the repository do, under every engine of the
// matrix and Terraform 1.15: Terraform 1.15 and 1.16 and OpenTofu 1.10
// and 1.12 apply it (a const variable under Terraform); Terraform 1.11,
// which evaluates no source, refuses it, and the runner with it.
// "../../modules/${var.name}" with name = "net" from a variable that is
// not const is refused by Terraform and applied by OpenTofu, and from a
// sensitive variable refused by both; from a function the SDK does not
// evaluate, directly or through a local, the engine's own answer (the
// workdir holds the directory the source's known part names, modules/): the runner gives the plain engine's answer each time, and never
// evaluates what the engine refuses (the workdir then holds no module
// the value would select).
func TestDynamicSourceByEngineRule(t *testing.T) {
	sourceEngines(t, func(t *testing.T, e testenv.Engine) {
		info, err := engine.Detect(testCtx(t), e.Path)
		require.NoError(t, err)
		early := earlyEvaluation(info)
		w := newEngineWorld(t, e)
		r := w.runner(t)
		for _, tc := range []struct {
			name, decl, source, value string
			applies                   bool // under an engine that evaluates sources
		}{
			{"const", constVar(e, "name"), `"../../modules/${lower(var.name)}"`, "NET", true},
			// A function the SDK does not evaluate (tostring is each
			// engine's own): left to the engine, which finds the module
			// in the directory the source's known part names, directly
			// or through a local.
			{"left-to-engine", constVar(e, "name"), `"../../modules/${tostring(var.name)}"`, "net", true},
			{"left-to-engine-local", constVar(e, "name") + "locals {\n  base = \"../../modules\"\n}\n",
				`"${local.base}/${tostring(var.name)}"`, "net", true},
			{"not-const", "variable \"name\" {\n  type = string\n}\n", `"../../modules/${var.name}"`, "net", e.Kind == engine.OpenTofu},
			{"sensitive", "variable \"name\" {\n  type      = string\n  sensitive = true\n}\n", `"../../modules/${var.name}"`, "net", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				repo := t.TempDir()
				src := filepath.Join(repo, "components", "app")
				writeTree(t, repo, map[string]string{
					"components/app/main.tf": tc.decl + `
module "m" {
  source = ` + tc.source + `
}
resource "terraform_data" "app" { input = module.m.which }
output "which" { value = module.m.which }
`,
					"modules/net/main.tf": `output "which" { value = "net" }` + "\n",
					"modules/dns/main.tf": `output "which" { value = "dns" }` + "\n",
				})
				u := w.unit(t, "app-"+tc.name, src, map[string]any{}, "app-"+tc.name)
				u.Args.Vars = map[string]string{"name": tc.value}
				applied := applySideBySide(t, e, r, repo, src, u)
				require.Equal(t, early && tc.applies, applied, "%s applies the %s case", info, tc.name)
				home, err := w.wd.Home(u.Workdir.Stack, u.Workdir.Instance)
				require.NoError(t, err)
				if applied {
					require.FileExists(t, filepath.Join(home, "src", "modules", "net", "main.tf"), "the module the source selects is in the workdir")
				} else {
					require.NoFileExists(t, filepath.Join(home, "src", "modules", "net", "main.tf"), "a source the engine refuses is never evaluated")
				}
				if !strings.HasPrefix(tc.name, "left-to-engine") {
					require.NoFileExists(t, filepath.Join(home, "src", "modules", "dns", "main.tf"), "only the module selected")
				}
			})
		}
	})
}
