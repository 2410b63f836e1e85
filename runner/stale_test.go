package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// staleRe is the stale-plan error of one input list: what changed, and
// nothing else, with no unit ID in it (the report names the unit).
var staleRe = regexp.MustCompile(`^saved plan is stale: (.+) changed since it was saved at \S+; run SavePlan again$`)

// secretValue is what the tests give the inputs they change: an error
// that names an input must never print its value.
const secretValue = "s3cr3t-v4lue"

// TestStalePlanNamesTheInput: ApplyPlan refuses a saved plan as stale
// naming exactly the input that changed since SavePlan (a TF_VAR_, a var
// file, the workspace with both names, a generated file, the component's
// files with the ones added, modified and removed, a -var, a
// TF_CLI_ARGS_plan), never its value, and the Run's error names the
// unit once. A record written before per-input parts existed is still
// read: an unchanged plan is applied, a changed one refused as changed
// since a record of an older version.
func TestStalePlanNamesTheInput(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "stale", itemComponent)
	varFile := filepath.Join(t.TempDir(), "prod.tfvars")
	require.NoError(t, os.WriteFile(varFile, []byte(`name = "a"`), 0o644))
	u := Unit{ID: "plat-ue2-dev/stale", Workspace: "blue",
		Workdir: workdirSpec("plat-ue2-dev", "stale", src, files(t, map[string]any{"name": "x"}, filepath.Join(w.dir, "stale.tfstate"))),
		Args:    Args{VarFiles: []string{varFile}, Vars: map[string]string{"name": "y"}}}
	r := w.runner(t)
	savePlan := func() *Report {
		t.Helper()
		rep, err := r.Run(testCtx(t), SavePlan, u)
		require.NoError(t, err)
		return rep
	}
	savePlan()

	cases := []struct {
		want   string
		change func()
	}{
		{"TF_VAR_region (added)", func() { t.Setenv("TF_VAR_region", secretValue) }},
		{"TF_VAR_region", func() { t.Setenv("TF_VAR_region", secretValue+"-2") }},
		{`var file "` + varFile + `"`, func() { require.NoError(t, os.WriteFile(varFile, []byte(`name = "`+secretValue+`"`), 0o644)) }},
		{`workspace ("blue", now "green")`, func() { u.Workspace = "green" }},
		{"generated file terraform.tfvars.json", func() {
			u.Workdir.Files["terraform.tfvars.json"] = []byte(`{"name": "` + secretValue + `"}`)
		}},
		{`the component's files (added "extra.tf")`, func() { writeTestFile(t, filepath.Join(src, "extra.tf"), `output "extra" { value = 1 }`) }},
		{`the component's files (modified "main.tf")`, func() { writeTestFile(t, filepath.Join(src, "main.tf"), itemComponent+"\n# edited\n") }},
		{`the component's files (removed "extra.tf")`, func() { require.NoError(t, os.Remove(filepath.Join(src, "extra.tf"))) }},
		{"-var name", func() { u.Args.Vars = map[string]string{"name": secretValue} }},
		{"env TF_CLI_ARGS_plan (added)", func() { t.Setenv("TF_CLI_ARGS_plan", "-parallelism=3") }},
		{"TF_VAR_zone (added)", func() { u.Env = map[string]string{"TF_VAR_zone": secretValue} }},
	}
	for _, tc := range cases {
		tc.change()
		rep, err := r.Run(testCtx(t), ApplyPlan, u)
		require.ErrorIs(t, err, ErrStalePlan, tc.want)
		require.Equal(t, 1, strings.Count(err.Error(), u.ID), "the unit is named once: %v", err)
		res := rep.Results[0]
		m := staleRe.FindStringSubmatch(res.Err.Error())
		require.NotNil(t, m, "%s: %v", tc.want, res.Err)
		require.Equal(t, tc.want, m[1], "exactly the input that changed")
		require.NotContains(t, err.Error(), secretValue, "a value in the error")
		savePlan() // the next case starts from a plan of the inputs as they are now
	}

	// A record of an older version has no parts: still read.
	rep := savePlan()
	meta := filepath.Join(filepath.Dir(rep.Results[0].Plan.File), planMetaName)
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Contains(t, rec, "parts", "the record names a digest per input")
	delete(rec, "parts")
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(meta, b, 0o644))
	was := os.Getenv("TF_VAR_region")
	t.Setenv("TF_VAR_region", "other")
	_, err = r.Run(testCtx(t), ApplyPlan, u)
	require.ErrorIs(t, err, ErrStalePlan)
	require.ErrorContains(t, err, "older version")
	t.Setenv("TF_VAR_region", was)
	_, err = r.Run(testCtx(t), ApplyPlan, u)
	require.NoError(t, err, "an older version's record of unchanged inputs is applied")
}

// TestInitReasonNamesTheInput: when init runs again, the reason names
// what changed since the last init (DryRun's InitReason, and the unit's
// log), never a value; an init record of an older version (no parts)
// still lets init be skipped when nothing changed.
func TestInitReasonNamesTheInput(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "initwhy", itemComponent)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "initwhy", src, files(t, map[string]any{"name": "x"}, filepath.Join(w.dir, "initwhy.tfstate")))}
	r := w.runner(t)
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	reason := func() string {
		t.Helper()
		steps, err := r.DryRun(testCtx(t), Apply, []Unit{u})
		require.NoError(t, err)
		return steps[0].InitReason
	}
	require.Empty(t, reason())

	t.Setenv("TF_CLI_ARGS_init", "-backend-config=password="+secretValue)
	require.Equal(t, "env TF_CLI_ARGS_init changed since the last init", reason())
	require.NoError(t, os.Unsetenv("TF_CLI_ARGS_init"))
	writeTestFile(t, filepath.Join(src, "main.tf"), itemComponent+"\n# touched\n")
	require.Equal(t, "configuration file main.tf changed since the last init", reason())
	rep, err = r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.False(t, rep.Results[0].InitSkipped)
	require.Contains(t, readFile(t, rep.Results[0].Log), "configuration file main.tf changed since the last init")

	// An older version's record: no parts.
	home, err := w.wd.Home("plat-ue2-dev", "initwhy")
	require.NoError(t, err)
	var recPath string
	require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == initRecordName {
			recPath = p
		}
		return err
	}))
	b, err := os.ReadFile(recPath)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Contains(t, rec, "parts")
	delete(rec, "parts")
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(recPath, b, 0o644))
	require.Empty(t, reason(), "nothing changed: an older record still skips init")
	writeTestFile(t, filepath.Join(src, "main.tf"), itemComponent)
	require.Contains(t, reason(), "older version")
}

// TestPlanBundleStaleNamesTheInput: a bundle imported where a TF_VAR_
// differs from the machine that planned is refused naming that variable
// alone, without its value, and the unit once.
func TestPlanBundleStaleNamesTheInput(t *testing.T) {
	e := testenv.Engine{Kind: engine.Terraform, Path: testenv.Terraform(t)}
	w := newEngineWorld(t, e)
	srv := testbackend.StartHTTPState(t)
	fix := fixture(t, "item")
	a, b := newMachine(t, w, "a", fix), newMachine(t, w, "b", fix)
	ua, ub := a.units(t, srv)[0], b.units(t, srv)[0]
	artifacts := filepath.Join(w.dir, "artifacts")
	_, err := a.runner.Run(testCtx(t), SavePlan, ua)
	require.NoError(t, err)
	_, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, nil), ua)
	require.NoError(t, err)

	t.Setenv("TF_VAR_region", secretValue)
	rep, err := b.runner.Run(testCtx(t), ImportPlan(artifacts, nil), ub)
	require.ErrorIs(t, err, ErrStalePlan)
	id := rep.Results[0].Unit
	require.Equal(t, 1, strings.Count(err.Error(), id), "the unit is named once: %v", err)
	require.NotContains(t, err.Error(), secretValue)
	m := regexp.MustCompile(`does not match this workdir: (.+) changed since it was saved at \S+$`).FindStringSubmatch(rep.Results[0].Err.Error())
	require.NotNil(t, m, "%v", rep.Results[0].Err)
	require.Equal(t, "TF_VAR_region (added)", m[1])
}

// TestPlanBundleNamesWorkspacesAndFiles: a bundle made in workspace
// "blue" and imported by a unit that selects "green", on a machine
// whose checkout has a file more, is refused naming both workspaces and
// the file (a workspace name is no secret), with nothing imported.
func TestPlanBundleNamesWorkspacesAndFiles(t *testing.T) {
	e := testenv.Engine{Kind: engine.Terraform, Path: testenv.Terraform(t)}
	w := newEngineWorld(t, e)
	pg := testbackend.StartPostgres(t)
	fix := fixture(t, "item")
	a, b := newMachine(t, w, "a", fix), newMachine(t, w, "b", fix)
	unit := func(m *machine, ws string) Unit {
		return Unit{Workspace: ws, Workdir: workdirSpec("plat-ue2-dev", "item", m.src, map[string][]byte{
			"backend.tf.json": pg.BackendJSON("wsbundle"), "terraform.tfvars.json": []byte(`{"name": "item"}`)})}
	}
	artifacts := filepath.Join(w.dir, "artifacts")
	_, err := a.runner.Run(testCtx(t), SavePlan, unit(a, "blue"))
	require.NoError(t, err)
	_, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, nil), unit(a, "blue"))
	require.NoError(t, err)

	writeTestFile(t, filepath.Join(b.src, "extra.tf"), `output "extra" { value = 1 }`)
	rep, err := b.runner.Run(testCtx(t), ImportPlan(artifacts, nil), unit(b, "green"))
	require.ErrorIs(t, err, ErrStalePlan)
	m := regexp.MustCompile(`does not match this workdir: (.+) changed since it was saved at \S+$`).FindStringSubmatch(rep.Results[0].Err.Error())
	require.NotNil(t, m, "%v", rep.Results[0].Err)
	require.Equal(t, `the component's files (added "extra.tf"), workspace ("blue", now "green")`, m[1])
	home, err := b.wd.Home("plat-ue2-dev", "item")
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(home, ".tfisolate", "data"))
	require.NoDirExists(t, filepath.Join(home, ".tfisolate", "data", planDirName), "nothing imported")
}
