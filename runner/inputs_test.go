package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSavedPlanRefusedWhenInputsChange: a saved plan is refused as stale
// when anything terraform reads besides the workdir changed since
// SavePlan: the workspace, the content of a var file or -backend-config
// file outside the workdir, a -backend-config value, TF_VAR_* or
// TF_CLI_ARGS in the process environment. And WithSkipUnchanged does not
// skip a unit for which any of those changed.
func TestSavedPlanRefusedWhenInputsChange(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, _ := fakeTerraform(t, fakeTerraformBody)
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithSkipUnchanged())
	require.NoError(t, err)
	outside := t.TempDir()
	varFile := filepath.Join(outside, "prod.tfvars")
	backendFile := filepath.Join(outside, "prod.tfbackend")
	cases := []struct {
		name   string
		change func(u *Unit)
	}{
		{"workspace", func(u *Unit) { u.Workspace = "green" }},
		{"var file content", func(*Unit) { require.NoError(t, os.WriteFile(varFile, []byte(`x = 2`), 0o644)) }},
		{"backend-config file content", func(*Unit) { require.NoError(t, os.WriteFile(backendFile, []byte(`path = "b"`), 0o644)) }},
		{"backend-config value", func(u *Unit) { u.Args.BackendConfig = append(u.Args.BackendConfig, "key=other") }},
		{"TF_VAR in the environment", func(*Unit) { t.Setenv("TF_VAR_x", "2") }},
		{"TF_CLI_ARGS in the environment", func(*Unit) { t.Setenv("TF_CLI_ARGS_plan", "-refresh=false") }},
	}
	for i, tc := range cases {
		require.NoError(t, os.WriteFile(varFile, []byte(`x = 1`), 0o644))
		require.NoError(t, os.WriteFile(backendFile, []byte(`path = "a"`), 0o644))
		u := Unit{Workspace: "blue", Workdir: workdirSpec("plat-ue2-dev", "inputs-"+string(rune('a'+i)), src, nil),
			Args: Args{VarFiles: []string{varFile}, BackendConfig: []string{backendFile}}}

		_, err := r.Run(testCtx(t), SavePlan, u)
		require.NoError(t, err, tc.name)
		_, err = r.Run(testCtx(t), Apply, u) // records the inputs skip-unchanged compares
		require.NoError(t, err, tc.name)
		tc.change(&u)
		_, err = r.Run(testCtx(t), ApplyPlan, u)
		require.ErrorIs(t, err, ErrStalePlan, tc.name)
		require.ErrorContains(t, err, "changed", tc.name)
		rep, err := r.Run(testCtx(t), Apply, u)
		require.NoError(t, err, tc.name)
		require.False(t, rep.Results[0].Unchanged, "%s: not skipped as unchanged", tc.name)
	}
}

// TestSkipUnchangedSeesApplyCLIArgs: a saved plan ignores what only its
// apply reads (TF_CLI_ARGS_apply), but the applied record, which
// describes an apply, does not: WithSkipUnchanged does not skip a unit
// whose TF_CLI_ARGS_apply changed since its last apply.
func TestSkipUnchangedSeesApplyCLIArgs(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, _ := fakeTerraform(t, fakeTerraformBody)
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithSkipUnchanged())
	require.NoError(t, err)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "apply-args", src, nil)}
	_, err = r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.True(t, rep.Results[0].Unchanged, "nothing changed: skipped")

	t.Setenv("TF_CLI_ARGS_apply", "-parallelism=3")
	rep, err = r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.False(t, rep.Results[0].Unchanged, "TF_CLI_ARGS_apply changed: not skipped")
}
