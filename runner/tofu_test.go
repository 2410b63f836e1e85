package runner

// OpenTofu's own configuration features through the runner, each side by
// side with plain tofu (or plain terraform) on a copy of the same root:
// .tofu and .tofu.json files, a NAME.tofu replacing NAME.tf, a module
// called only from a .tofu file, a backend and provider requirements in
// .tofu files (issue 25 items 2, 3, 6), and early evaluation: a backend
// path and a module source built from variables given by Args.Vars,
// Args.VarFiles and TF_VAR_* (item 4).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// plannedChange is one entry of a plan's resource_changes, as compared
// between the runner's plan and the engine's own.
type plannedChange struct {
	Address string         `json:"address"`
	Actions []string       `json:"actions"`
	After   map[string]any `json:"after"`
}

// planChanges reads the resource_changes of a show -json document, sorted
// by address.
func planChanges(t *testing.T, doc []byte) []plannedChange {
	t.Helper()
	var d struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string       `json:"actions"`
				After   map[string]any `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	require.NoError(t, json.Unmarshal(doc, &d), "%s", doc)
	var out []plannedChange
	for _, rc := range d.ResourceChanges {
		out = append(out, plannedChange{rc.Address, rc.Change.Actions, rc.Change.After})
	}
	slices.SortFunc(out, func(a, b plannedChange) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// plainPlan runs the engine by hand in dir (a copy of the component): init
// and plan -out with args (variables), then show -json of that plan with
// them too (Terraform 1.15 loads the module sources to show a plan, and
// needs the values they read), and returns the document.
func plainPlan(t *testing.T, e testenv.Engine, dir string, env []string, args ...string) []byte {
	t.Helper()
	env = append(env, "TF_DATA_DIR="+filepath.Join(dir, ".plain-data"))
	out, err := runEngine(testCtx(t), e.Path, dir, env, append([]string{"init", "-input=false", "-no-color"}, args...)...)
	require.NoError(t, err, "plain %s init:\n%s", e.Kind, out)
	out, err = runEngine(testCtx(t), e.Path, dir, env, append([]string{"plan", "-input=false", "-no-color", "-out=plain.tfplan"}, args...)...)
	require.NoError(t, err, "plain %s plan:\n%s", e.Kind, out)
	cmd := append(append([]string{"show", "-json", "-no-color"}, args...), "plain.tfplan")
	doc, err := runEngine(testCtx(t), e.Path, dir, env, cmd...)
	require.NoError(t, err, "plain %s show:\n%s", e.Kind, doc)
	return []byte(doc)
}

// copyOf copies the tree at dir into a new temporary directory and
// returns the copy.
func copyOf(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.CopyFS(dst, os.DirFS(dir)))
	return dst
}

// workdirOf prepares a unit's workdir again (the same spec and engine the
// runner gave it) to find where its files are; the lock is released when
// the test ends.
func workdirOf(t *testing.T, m *workdir.Manager, u Unit, k engine.Kind) *workdir.Workdir {
	t.Helper()
	s := u.Workdir
	s.Engine = workdirEngine(k)
	wd, err := m.Prepare(testCtx(t), s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = wd.Close() })
	return wd
}

// tofuFilesRepo is a component with both engines' files: terraform reads
// versions.tf and main.tf; OpenTofu reads versions.tofu and main.tofu
// (which hide them), net.tofu (calling a module nothing else calls),
// backend.tofu (a local backend path) and extra.tofu.json.
var tofuFilesRepo = map[string]string{
	"components/app/versions.tf": `terraform {
  required_providers {
    tfitest = { source = "` + shortSource + `" }
  }
}`,
	"components/app/versions.tofu": `terraform {
  required_providers {
    tfitest = {
      source  = "` + shortSource + `"
      version = "` + providerVersion + `"
    }
  }
}`,
	"components/app/main.tf":   `resource "tfitest_item" "this" { name = "from-tf" }`,
	"components/app/main.tofu": `resource "tfitest_item" "this" { name = "from-tofu" }`,
	"components/app/net.tofu": `module "net" { source = "../../modules/net" }
output "net" { value = module.net.o }`,
	"components/app/backend.tofu":    "terraform {\n  backend \"local\" { path = \"state/current.json\" }\n}",
	"components/app/extra.tofu.json": `{"resource": {"terraform_data": {"json": {"input": "from-tofu-json"}}}}`,
	"modules/net/main.tf": `resource "terraform_data" "net" { input = "net" }
output "o" { value = terraform_data.net.output }`,
}

// TestEnginesTofuFilesLikePlainEngine plans (SavePlan) and applies a
// component holding .tf, .tofu and .tofu.json files under each engine,
// and plans a copy of it with the engine itself: the resource changes
// are the same. Under OpenTofu the .tofu files count (main.tofu replaces
// main.tf, the module called only from net.tofu is there, the state is
// at backend.tofu's path and Remove refuses to delete it, versions.tofu's
// requirement is what the lock file pins); under terraform they change
// nothing.
func TestEnginesTofuFilesLikePlainEngine(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		repo := filepath.Join(w.dir, "repo")
		writeTree(t, repo, tofuFilesRepo)
		plainRepo := copyOf(t, repo) // before anything ran
		src := filepath.Join(repo, "components", "app")
		u := Unit{Workdir: workdirSpec("plat-ue2-dev", "app/one", src, nil)}
		r := w.runner(t)

		rep, err := r.Run(testCtx(t), SavePlan, u)
		require.NoError(t, err)
		res := rep.Results[0]
		require.Equal(t, Succeeded, res.Status, "%v", res.Err)
		require.NotNil(t, res.Plan)
		got := planChanges(t, []byte(readFile(t, res.Plan.JSONFile)))

		cli := filepath.Join(w.dir, "mirror.tfrc")
		require.NoError(t, os.WriteFile(cli, w.cache.CLIConfig(), 0o644))
		want := planChanges(t, plainPlan(t, e, filepath.Join(plainRepo, "components", "app"), testenv.TerraformEnv(cli)))
		require.Equal(t, want, got, "the runner's plan and plain %s's", e.Kind)

		var addrs []string
		for _, c := range got {
			addrs = append(addrs, c.Address)
		}
		statePlace := "terraform.tfstate"
		name := "from-tf"
		if e.Kind == engine.OpenTofu {
			require.Equal(t, []string{"module.net.terraform_data.net", "terraform_data.json", "tfitest_item.this"}, addrs)
			statePlace, name = filepath.Join("state", "current.json"), "from-tofu"
		} else {
			require.Equal(t, []string{"tfitest_item.this"}, addrs, "terraform reads no .tofu file")
		}

		rep, err = r.Run(testCtx(t), ApplyPlan, u)
		require.NoError(t, err)
		require.Equal(t, Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
		wd := workdirOf(t, w.wd, u, e.Kind)
		items := stateResources(t, filepath.Join(wd.Dir, statePlace))
		require.Equal(t, name, items["tfitest_item.this"]["name"])
		w.requireEngineLock(t, w.lockFile(t, u.Workdir.Instance))
		home := wd.Home
		require.NoError(t, wd.Close())
		err = w.wd.Remove(testCtx(t), u.Workdir.Stack, u.Workdir.Instance, false)
		require.ErrorIs(t, err, workdir.ErrHasState, "the state at the backend's path is the instance's")
		require.Contains(t, err.Error(), statePlace)
		require.DirExists(t, home)
	})
}

// earlyComponent's backend path and module source are variables, which
// OpenTofu evaluates at init (early evaluation, 1.8).
var earlyComponent = map[string]string{
	"main.tofu": `
variable "state_path" { type = string }
variable "flavor" { type = string }
terraform {
  backend "local" { path = var.state_path }
}
module "m" { source = "./mods/${var.flavor}" }
output "flavor" { value = module.m.flavor }
`,
	"mods/a/main.tf": `resource "terraform_data" "m" { input = "a" }
output "flavor" { value = terraform_data.m.output }`,
	"mods/b/main.tf": `resource "terraform_data" "m" { input = "b" }
output "flavor" { value = terraform_data.m.output }`,
}

// TestTofuEarlyEvaluation runs a component whose backend path and module
// source are variables, the values given by Args.Vars, by Args.VarFiles
// and by TF_VAR_*: SavePlan's resource changes equal plain tofu's on a
// copy given the same values, ApplyPlan puts the state at the path the
// variable names, and a plan with the same values skips init. A new
// module source value runs init again and plans the other module; a new
// backend path changes the init record's Backend fingerprint (what the
// rule for a changed backend compares).
func TestTofuEarlyEvaluation(t *testing.T) {
	t.Parallel()
	e := testenv.Engine{Kind: engine.OpenTofu, Path: testenv.Tofu(t)}
	w := newEngineWorld(t, e)
	src := filepath.Join(w.dir, "components", "early")
	writeTree(t, src, earlyComponent)
	cli := filepath.Join(w.dir, "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	r := w.runner(t)

	for _, tc := range []struct {
		name   string
		unit   func(u *Unit)
		plain  []string // the same values, as plain tofu is given them
		env    []string
		state  string
		flavor string
	}{
		{"Args.Vars", func(u *Unit) {
			u.Args.Vars = map[string]string{"state_path": "states/vars.tfstate", "flavor": "a"}
		}, []string{"-var", "state_path=states/vars.tfstate", "-var", "flavor=a"}, nil, "states/vars.tfstate", "a"},
		{"Args.VarFiles", func(u *Unit) {
			u.Workdir.Files = map[string][]byte{"early.tfvars": []byte("state_path = \"states/files.tfstate\"\nflavor = \"b\"\n")}
			u.Args.VarFiles = []string{"early.tfvars"}
		}, []string{"-var-file=early.tfvars"}, nil, "states/files.tfstate", "b"},
		{"TF_VAR", func(u *Unit) {
			u.Env = map[string]string{"TF_VAR_state_path": "states/env.tfstate", "TF_VAR_flavor": "a"}
		}, nil, []string{"TF_VAR_state_path=states/env.tfstate", "TF_VAR_flavor=a"}, "states/env.tfstate", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", "early/"+strings.ToLower(strings.ReplaceAll(tc.name, ".", "-")), src, nil)}
			tc.unit(&u)
			rep, err := r.Run(testCtx(t), SavePlan, u)
			require.NoError(t, err)
			res := rep.Results[0]
			require.Equal(t, Succeeded, res.Status, "%v", res.Err)
			got := planChanges(t, []byte(readFile(t, res.Plan.JSONFile)))

			plain := copyOf(t, src)
			for n, b := range u.Workdir.Files {
				require.NoError(t, os.WriteFile(filepath.Join(plain, n), b, 0o644))
			}
			want := planChanges(t, plainPlan(t, e, plain, append(testenv.TerraformEnv(cli), tc.env...), tc.plain...))
			require.Equal(t, want, got, "the runner's plan and plain tofu's")
			require.Len(t, got, 1)
			require.Equal(t, "module.m.terraform_data.m", got[0].Address)
			require.Equal(t, tc.flavor, got[0].After["input"])

			rep, err = r.Run(testCtx(t), ApplyPlan, u)
			require.NoError(t, err)
			require.Equal(t, Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
			wd := workdirOf(t, w.wd, u, e.Kind)
			require.Equal(t, map[string]any{"type": "string", "value": tc.flavor}, stateResources(t, filepath.Join(wd.Dir, filepath.FromSlash(tc.state)))["terraform_data.m"]["input"],
				"the state is at the path the variable names")
			require.FileExists(t, filepath.Join(wd.DataDir, initRecordName))
			require.NoError(t, wd.Close())

			rep, err = r.Run(testCtx(t), Plan, u)
			require.NoError(t, err)
			require.Equal(t, Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
			require.True(t, rep.Results[0].InitSkipped, "the same values: nothing init depends on changed")
			require.False(t, rep.Results[0].HasChanges)
		})
	}

	// Other values for the Args.Vars instance.
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "early/args-vars", src, nil),
		Args: Args{Vars: map[string]string{"state_path": "states/vars.tfstate", "flavor": "b"}}}
	home, err := w.wd.Home(u.Workdir.Stack, u.Workdir.Instance)
	require.NoError(t, err)
	record := func() initRecord {
		t.Helper()
		var rec initRecord
		b, err := os.ReadFile(filepath.Join(home, ".tfisolate", "data", initRecordName))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &rec))
		return rec
	}
	before := record()
	rep, err := r.Run(testCtx(t), SavePlan, u)
	require.NoError(t, err)
	res := rep.Results[0]
	require.Equal(t, Succeeded, res.Status, "%v", res.Err)
	require.False(t, res.InitSkipped, "a new module source value needs init")
	changes := planChanges(t, []byte(readFile(t, res.Plan.JSONFile)))
	require.Len(t, changes, 1)
	require.Equal(t, []string{"update"}, changes[0].Actions, "module b's resource in place of module a's")
	require.Equal(t, "b", changes[0].After["input"])
	after := record()
	require.Equal(t, before.Backend, after.Backend, "the backend did not change")
	require.NotEqual(t, before.Fingerprint, after.Fingerprint)

	u.Args.Vars["state_path"] = "states/moved.tfstate"
	u.Args.Reconfigure = true // what the caller says when the backend moves
	rep, err = r.Run(testCtx(t), Plan, u)
	require.NoError(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
	require.NotEqual(t, after.Backend, record().Backend, "a backend path from a variable's value is part of the backend fingerprint")
}
