package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/stretchr/testify/require"
)

// execComponent has a sensitive variable and output, and one variable
// from each place the runner takes them: Args.Vars, Args.VarFiles,
// TF_VAR_* in Unit.Env and TF_VAR_* in the process environment.
const execComponent = `
variable "secret" {
  type      = string
  sensitive = true
}
variable "name" { type = string }
variable "file_var" { type = string }
variable "env_var" { type = string }
variable "proc_var" { type = string }
resource "terraform_data" "s" { input = var.secret }
resource "terraform_data" "plain" { input = "${var.name}/${var.file_var}/${var.env_var}/${var.proc_var}" }
output "secret" {
  value     = var.secret
  sensitive = true
}
output "combined" { value = terraform_data.plain.output }
`

// TestHandleExec: a custom step runs subcommands terraform-exec lacks
// (state list, state show) and a plan with the unit's variables through
// Handle.Exec, with the unit's whole environment (TF_VAR_* of Unit.Env
// and of the process included), and gets their output, the secret
// included when it asks for it (output -raw). The secret reaches no log,
// stream, event, JSON report or Result.Data; terraform's stderr of a
// failed Exec reaches the unit's log and the error; an Exec after the
// step returned is refused.
func TestHandleExec(t *testing.T) {
	t.Setenv("TF_VAR_proc_var", "from-process")
	w := newWorld(t)
	src := w.component(t, "exec", execComponent)
	logDir := filepath.Join(w.dir, "logs")
	out := &syncBuffer{}
	var mu sync.Mutex
	var events []string
	r := w.runner(t, WithOutput(out), WithLogDir(logDir), WithEvents(func(e Event) {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		mu.Lock()
		events = append(events, string(b))
		mu.Unlock()
	}))
	u := Unit{
		Workdir: workdirSpec("plat-ue2-dev", "exec", src, map[string][]byte{
			"vars/secret.tfvars.json": []byte(`{"secret":"` + secret + `","file_var":"from-file"}`),
		}),
		Args: Args{VarFiles: []string{"vars/secret.tfvars.json"}, Vars: map[string]string{"name": "from-args"}},
		Env:  map[string]string{"TF_VAR_env_var": "from-env"},
	}
	var reports []string
	report := func(rep *Report) {
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		reports = append(reports, string(b))
	}
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	report(rep)
	require.JSONEq(t, `"from-args/from-file/from-env/from-process"`, string(rep.Results[0].Outputs["combined"].Value))

	type seen struct {
		list, show, raw string
		planErr         error
		noVarsErr       error
		opts            int
		badOpts         error
		emptyErr        error
	}
	var got seen
	var kept *Handle
	step := Step("inspect", func(ctx context.Context, h *Handle) error {
		kept = h
		_, got.emptyErr = h.Exec(ctx)
		b, err := h.Exec(ctx, "state", "list")
		if err != nil {
			return err
		}
		got.list = string(b)
		if b, err = h.Exec(ctx, "state", "show", "-no-color", "terraform_data.plain"); err != nil {
			return err
		}
		got.show = string(b)
		if b, err = h.Exec(ctx, "output", "-raw", "secret"); err != nil {
			return err
		}
		got.raw = string(b)
		// Exit 0 with -detailed-exitcode: every variable has the value
		// the apply had; a missing one fails, a different one exits 2.
		_, got.planErr = h.Exec(ctx, append([]string{"plan", "-input=false", "-no-color", "-detailed-exitcode"}, h.VarArgs()...)...)
		_, got.noVarsErr = h.Exec(ctx, "plan", "-input=false", "-no-color")
		opts, err := VarOptions[tfexec.PlanOption](h)
		if err != nil {
			return err
		}
		got.opts = len(opts)
		_, got.badOpts = VarOptions[tfexec.InitOption](h)
		h.Record(strings.Count(got.list, "\n"))
		return nil
	})
	rep, err = r.Run(testCtx(t), step, u)
	require.NoError(t, err)
	report(rep)
	res := rep.Results[0]
	require.Equal(t, Succeeded, res.Status, "%v", res.Err)

	require.Equal(t, "terraform_data.plain\nterraform_data.s\n", got.list)
	require.Contains(t, got.show, `resource "terraform_data" "plain"`)
	require.Contains(t, got.show, "from-args/from-file/from-env/from-process")
	require.Equal(t, secret, got.raw, "the step asked for the secret and got it")
	require.NoError(t, got.planErr, "plan with the unit's variables and environment: no changes")
	var ee *ExecError
	require.ErrorAs(t, got.noVarsErr, &ee)
	require.Equal(t, 1, ee.ExitCode)
	require.Contains(t, ee.Error(), `terraform plan: exit status 1: Error: No value for required variable`)
	require.Equal(t, 2, got.opts, "one var file and one -var")
	require.ErrorContains(t, got.badOpts, "tfexec.InitOption")
	require.ErrorContains(t, got.emptyErr, "no terraform subcommand")
	require.Equal(t, 2, res.Data)
	require.Contains(t, readFile(t, res.Log), "No value for required variable", "terraform's stderr goes to the unit's log")

	// The Handle is spent once the step returned.
	_, err = kept.Exec(testCtx(t), "state", "list")
	require.ErrorIs(t, err, ErrHandleDone)
	_, err = (&Handle{}).Exec(testCtx(t), "state", "list")
	require.ErrorIs(t, err, ErrHandleDone)

	// What Exec captured (output -raw printed the secret) is not kept.
	ents, err := os.ReadDir(filepath.Join(kept.Workdir.DataDir, engineDir))
	if !errors.Is(err, os.ErrNotExist) {
		require.NoError(t, err)
		require.Empty(t, ents, "engine output files left behind")
	}

	require.NotContains(t, out.String(), secret, "output stream")
	require.NotEmpty(t, out.String())
	mu.Lock()
	require.NotContains(t, strings.Join(events, "\n"), secret, "events")
	mu.Unlock()
	require.NotContains(t, strings.Join(reports, "\n"), secret, "JSON reports")
	requireNoSecretInLogs(t, logDir, filepath.Join(w.dir, "workdirs"))
}

// requireNoSecretInLogs checks every log file under roots for secret.
func requireNoSecretInLogs(t *testing.T, roots ...string) {
	t.Helper()
	logs := 0
	for _, root := range roots {
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
				return err
			}
			logs++
			require.NotContains(t, readFile(t, p), secret, p)
			return nil
		}))
	}
	require.NotZero(t, logs)
}

// TestExecArgsWithoutTerraform: Exec refuses an empty command line and
// a Handle the runner did not make; VarArgs puts var files before vars.
func TestExecArgsWithoutTerraform(t *testing.T) {
	_, err := (&Handle{}).Exec(context.Background())
	require.ErrorIs(t, err, ErrHandleDone)
	var zero *Handle
	_, err = zero.Exec(context.Background(), "version")
	require.ErrorIs(t, err, ErrHandleDone)

	h := &Handle{Unit: Unit{Args: Args{VarFiles: []string{"a.tfvars", "b.tfvars"}, Vars: map[string]string{"z": "1", "a": "x=y"}}}}
	require.Equal(t, []string{"-var-file=a.tfvars", "-var-file=b.tfvars", "-var", "a=x=y", "-var", "z=1"}, h.VarArgs())
	opts, err := VarOptions[tfexec.ApplyOption](h)
	require.NoError(t, err)
	require.Len(t, opts, 4)
	for i, o := range opts {
		_, isFile := o.(*tfexec.VarFileOption)
		require.Equal(t, i < 2, isFile, "var files first: %d", i)
	}
	_, err = VarOptions[tfexec.InitOption](h)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrHandleDone))
}
