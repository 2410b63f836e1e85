package runner

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTerraformBody answers every subcommand the pipeline runs the way
// terraform would, from a shell script: enough to check which processes
// each step starts, with which arguments, without running terraform.
const fakeTerraformBody = `
last() { for a in "$@"; do l="$a"; done; echo "$l"; }
case "$1" in
init|validate|destroy|force-unlock) exit 0;;
workspace) last "$@" > "$TF_DATA_DIR/environment"; exit 0;;
plan)
  for a in "$@"; do case "$a" in -out=*) echo plan > "${a#-out=}";; esac; done
  exit 2;;
show) echo '{"resource_changes":[{"address":"x.y","change":{"actions":["create"]}}],"output_changes":{}}'; exit 0;;
apply) echo '{"type":"change_summary","changes":{"add":1,"change":0,"import":0,"remove":0,"operation":"apply"},"@message":"Apply complete! Resources: 1 added, 0 changed, 0 destroyed."}'
  echo '{"type":"outputs","outputs":{"id":{"sensitive":false,"type":"string","value":"x-1"}}}'; exit 0;;
output) echo '{"id":{"sensitive":false,"type":"string","value":"x-1"}}'; exit 0;;
esac
echo "unexpected: $*" >&2; exit 1
`

// TestPipelineSteps runs each command through the pipeline against a fake
// terraform and checks the processes each step starts: init and the
// workspace only when needed, then exactly the command's own.
func TestPipelineSteps(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, calls := fakeTerraform(t, fakeTerraformBody)
	rec := &recorder{}
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithRetry(RetryPolicy{}), WithEvents(rec.add))
	require.NoError(t, err)
	u := Unit{Workspace: "dev", Workdir: workdirSpec("plat-ue2-dev", "steps", src, nil),
		Args: Args{Vars: map[string]string{"a": "1"}, Targets: []string{"x.y"}}}
	run := func(c Command) Result {
		t.Helper()
		rep, err := r.Run(testCtx(t), c, u)
		require.NoError(t, err)
		return rep.Results[0]
	}
	first := func(calls []string) []string {
		var out []string
		for _, c := range calls {
			out = append(out, strings.Fields(c)[0])
		}
		return out
	}

	res := run(Apply)
	got := calls()
	require.Equal(t, []string{"init", "workspace", "apply"}, first(got))
	require.Equal(t, "init -input=false -no-color", got[0])
	require.Equal(t, "workspace select -or-create=true -- dev", got[1])
	require.Equal(t, "apply -auto-approve -json -input=false -lock-timeout=0ms -target=x.y -var a=1", got[2])
	require.JSONEq(t, `"x-1"`, string(res.Outputs["id"].Value))
	require.False(t, res.InitSkipped)
	require.NotEmpty(t, rec.events)
	for _, e := range rec.events {
		require.Equal(t, Engine{Kind: "terraform", Version: "1.11.4", Path: tf}, e.Engine, "every event says which engine runs")
	}

	// Nothing changed: init is skipped and the workspace is already
	// selected; one process.
	res = run(Apply)
	require.Equal(t, []string{"apply"}, first(calls()))
	require.True(t, res.InitSkipped)

	res = run(Plan)
	require.Equal(t, []string{"plan -json -detailed-exitcode -input=false -lock-timeout=0ms -target=x.y -var a=1"}, calls())
	require.True(t, res.HasChanges, "exit code 2 is a plan with changes")

	res = run(SavePlan)
	got = calls()
	require.Len(t, got, 2)
	require.True(t, strings.HasPrefix(got[0], "plan -json -detailed-exitcode"), got[0])
	require.True(t, strings.HasSuffix(got[0], ".tmp"), "the plan is written beside and renamed: %s", got[0])
	require.Equal(t, "show -json -no-color "+res.Plan.File, got[1])
	require.Equal(t, 1, res.Plan.Add)
	require.Equal(t, []ResourceChange{{Address: "x.y", Actions: []string{"create"}}}, res.Plan.Changes)
	require.Equal(t, filepath.Join(filepath.Dir(res.Plan.File), planJSONName), res.Plan.JSONFile)

	res = run(ApplyPlan)
	require.Equal(t, []string{"apply -auto-approve -json -input=false -lock-timeout=0ms " + res.Plan.File}, calls(),
		"a saved plan is applied with no variables or targets: they are in the plan")
	_, err = r.Run(testCtx(t), ApplyPlan, u)
	require.ErrorIs(t, err, ErrNoPlan, "a saved plan is applied once")
	require.Empty(t, calls(), "a refused plan starts no terraform")

	res = run(Output)
	require.Equal(t, []string{"output -json"}, calls())
	b, err := json.Marshal(res.Outputs["id"].Value)
	require.NoError(t, err)
	require.JSONEq(t, `"x-1"`, string(b))

	run(Validate)
	require.Equal(t, []string{"validate -no-color"}, calls())
	run(Destroy)
	require.Equal(t, []string{"destroy -auto-approve -json -input=false -lock-timeout=0ms -target=x.y -var a=1"}, calls())

	// Init alone always runs init.
	run(Init)
	require.Equal(t, []string{"init"}, first(calls()))
	require.NoError(t, r.ForceUnlock(testCtx(t), u, "lock-1"))
	require.Equal(t, []string{"force-unlock -force -no-color -- lock-1"}, calls())
}
