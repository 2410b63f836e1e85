package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// deepComponent calls a local module that calls another one: component
// -> ../modules/outer -> ../inner.
var deepComponent = map[string]string{
	"component/main.tf": itemComponent + `
module "outer" { source = "../modules/outer" }
`,
	"modules/outer/main.tf": `module "inner" { source = "../inner" }`,
	"modules/inner/main.tf": `output "v" { value = "one" }`,
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		writeTestFile(t, filepath.Join(root, filepath.FromSlash(name)), body)
	}
}

// TestSkipUnchanged: after a successful apply, an unchanged unit runs no
// terraform at all; a change in a local module two levels down, in a
// generated tfvars file, or in the lock file makes it run again.
func TestSkipUnchanged(t *testing.T) {
	w := newWorld(t)
	wrapper, calls := countingTerraform(t, w.tf)
	repo := filepath.Join(w.dir, "repo")
	writeTree(t, repo, deepComponent)
	src := filepath.Join(repo, "component")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "skip", src, files(t, map[string]any{"name": "a"}, filepath.Join(w.dir, "skip.tfstate")))}
	cache := w.cache
	run := func(t *testing.T) Result {
		t.Helper()
		r, err := New(WithWorkdirs(w.wd), WithPluginCache(cache), WithTerraform(wrapper), WithSkipUnchanged())
		require.NoError(t, err)
		rep, err := r.Run(testCtx(t), Apply, u)
		require.NoError(t, err)
		return rep.Results[0]
	}
	first := run(t)
	require.False(t, first.Unchanged)
	require.Equal(t, []string{"init", "apply"}, calls())

	same := run(t)
	require.True(t, same.Unchanged)
	require.Equal(t, Succeeded, same.Status)
	require.Empty(t, calls(), "an unchanged unit starts no terraform process")

	t.Run("local module two levels down", func(t *testing.T) {
		writeTestFile(t, filepath.Join(repo, "modules", "inner", "main.tf"), `output "v" { value = "two" }`)
		require.False(t, run(t).Unchanged)
		require.Contains(t, calls(), "apply")
		require.True(t, run(t).Unchanged)
		calls()
	})
	t.Run("generated tfvars file", func(t *testing.T) {
		u.Workdir.Files["terraform.tfvars.json"] = []byte(`{"name": "b"}`)
		require.False(t, run(t).Unchanged)
		require.Contains(t, calls(), "apply")
		require.True(t, run(t).Unchanged)
		calls()
	})
	t.Run("lock file", func(t *testing.T) {
		// A newer release appears and the component's lock file, which
		// pinned the old one, is dropped: the lock file now names the
		// newer release.
		lock := lockFileOf(t, w, "plat-ue2-dev", "skip")
		writeTestFile(t, filepath.Join(src, lockFileName), string(lock))
		run(t) // committing the lock file is a change to the source
		require.True(t, run(t).Unchanged)
		calls()
		bin := testprovider.Build(t)
		zip, err := os.ReadFile(bin.Zip(t, "1.1.0"))
		require.NoError(t, err)
		w.reg.MustAdd(t, testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type,
			Version: "1.1.0", Platform: testprovider.Platform, Zip: zip})
		// A new Cache lists versions afresh.
		cache, err = pluginc.Open(w.cache.Dir(), pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(w.reg.HTTPClient()))
		require.NoError(t, err)
		require.NoError(t, os.Remove(filepath.Join(src, lockFileName)))
		res := run(t)
		require.False(t, res.Unchanged)
		require.Contains(t, calls(), "apply")
		after := lockFileOf(t, w, "plat-ue2-dev", "skip")
		require.Contains(t, string(after), `version     = "1.1.0"`)
	})
}

// TestAppliedRecordInPlace: the applied record, once made, is recorded
// and forgotten in place (the same file, its size kept); a forgotten
// record matches no inputs, and neither does a record torn between two
// applies' inputs (what a power loss mid-write can leave). A link at the
// record's place is removed, never written through.
func TestAppliedRecordInPlace(t *testing.T) {
	dir := t.TempDir()
	x := &unitRun{w: &workdir.Workdir{DataDir: dir}}
	p := filepath.Join(dir, appliedName)
	d1, d2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	same := func(inputs string) bool {
		ok, err := x.unchanged(inputs)
		require.NoError(t, err)
		return ok
	}

	require.NoError(t, x.forgetApplied(), "no record yet")
	require.NoError(t, x.recordApplied(d1))
	first, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, int64(appliedSize), first.Size())
	require.True(t, same(d1))

	require.NoError(t, x.forgetApplied())
	require.False(t, same(d1), "a forgotten record still matches")
	require.False(t, same(""))
	require.NoError(t, x.forgetApplied(), "forgetting twice")
	require.NoError(t, x.recordApplied(d2))
	require.True(t, same(d2))
	require.False(t, same(d1))
	now, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(first, now), "the record was replaced, not rewritten in place")
	require.Equal(t, first.Size(), now.Size())

	// Torn: the start of d1's record over the rest of d2's.
	b2, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, x.recordApplied(d1))
	b1, err := os.ReadFile(p)
	require.NoError(t, err)
	for _, cut := range []int{1, 12, 20, 40, 76} {
		torn := append(append([]byte{}, b1[:cut]...), b2[cut:]...)
		require.NoError(t, os.WriteFile(p, torn, 0o644))
		require.False(t, same(d1) && same(d2), "cut at %d", cut)
		require.True(t, !same(d1) || string(torn) == string(b1), "cut at %d reads as d1", cut)
		require.True(t, !same(d2) || string(torn) == string(b2), "cut at %d reads as d2", cut)
	}

	target := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.WriteFile(target, b1, 0o644))
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink(target, p))
	require.NoError(t, x.forgetApplied())
	_, err = os.Lstat(p)
	require.ErrorIs(t, err, os.ErrNotExist, "the link is removed")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, b1, b, "written through the link")
}

// TestAffected: the public Affected refuses an empty path and a unit
// without a source by name, and hands internal/affected each unit's ID
// (Stack/Instance when it has none), absolute var files and
// -backend-config files, and its dynamic module sources evaluated from
// its Args.Vars and Env (by each engine's rule, with the functions it
// has at init), or Workdir.ModuleSources where the caller gives them; a
// source one engine refuses (a variable that is not const, to Terraform)
// reaches no module under it, and one that cannot be evaluated (a
// function the SDK does not have) makes every change count.
func TestAffected(t *testing.T) {
	repo := t.TempDir()
	const which = "variable \"which\" {\n  const = true\n}\n"
	writeTree(t, repo, map[string]string{
		"components/app/main.tf":   which + `module "net" { source = "../../modules/${var.which}" }`,
		"components/fn/main.tf":    "variable \"which\" {\n  default = \"BLUE\"\n  const = true\n}\n" + `module "net" { source = "../../modules/${lower(var.which)}" }`,
		"components/nc/main.tf":    "variable \"which\" {}\n" + `module "net" { source = "../../modules/${var.which}" }`,
		"components/ts/main.tf":    which + `module "net" { source = "../../modules/${tostring(var.which)}" }`,
		"components/db/main.tf":    `resource "terraform_data" "x" {}`,
		"modules/blue/main.tf":     `output "o" { value = 1 }`,
		"modules/green/main.tf":    `output "o" { value = 1 }`,
		"vars/db.tfvars":           `x = 1`,
		"backends/db.s3.tfbackend": `bucket = "b"`,
	})
	app := filepath.Join(repo, "components/app")
	units := []Unit{
		{ID: "vars", Workdir: workdirSpec("s", "vars", app, nil), Args: Args{Vars: map[string]string{"which": "blue"}}},
		{ID: "env", Workdir: workdirSpec("s", "env", app, nil), Env: map[string]string{"TF_VAR_which": "green"}},
		{Workdir: workdir.Spec{Stack: "s", Instance: "given", Source: app, ModuleSources: map[string]string{"net": "../../modules/green"}}},
		{ID: "fn", Workdir: workdirSpec("s", "fn", filepath.Join(repo, "components/fn"), nil)},
		{ID: "nc", Workdir: workdirSpec("s", "nc", filepath.Join(repo, "components/nc"), nil), Args: Args{Vars: map[string]string{"which": "blue"}}},
		{ID: "ts", Workdir: workdirSpec("s", "ts", filepath.Join(repo, "components/ts"), nil), Args: Args{Vars: map[string]string{"which": "blue"}}},
		{ID: "db", Workdir: workdirSpec("s", "db", filepath.Join(repo, "components/db"), nil), Args: Args{
			VarFiles: []string{filepath.Join(repo, "vars/db.tfvars")}, BackendConfig: []string{filepath.Join(repo, "backends/db.s3.tfbackend")}}},
	}
	for path, want := range map[string][]string{
		"modules/blue/main.tf":     {"vars", "fn", "nc", "ts"},
		"modules/green/main.tf":    {"env", "s/given", "ts"},
		"vars/db.tfvars":           {"ts", "db"},
		"backends/db.s3.tfbackend": {"ts", "db"},
	} {
		got, err := Affected(units, repo, path)
		require.NoError(t, err)
		require.Equal(t, want, got, path)
	}
	_, err := Affected(units, repo, "")
	require.ErrorIs(t, err, ErrBadOption)
	_, err = Affected([]Unit{{ID: "nosrc"}}, repo, "x")
	require.ErrorIs(t, err, ErrInvalidUnit)
	require.ErrorContains(t, err, "nosrc")
}
