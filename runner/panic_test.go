package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestPanicFailsOneUnit: a unit whose Generate panics fails with
// ErrPanic and the panic's message; the host goes on, and the other unit
// of the Run succeeds.
func TestPanicFailsOneUnit(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, _ := fakeTerraform(t, fakeTerraformBody)
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf))
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), Apply,
		Unit{Workdir: workdirSpec("plat-ue2-dev", "ok", src, nil)},
		Unit{Workdir: workdirSpec("plat-ue2-dev", "boom", src, nil),
			Generate: func(context.Context, map[string]Result) (map[string][]byte, error) { panic("generator bug") }})
	require.ErrorIs(t, err, ErrPanic)
	for _, res := range rep.Results {
		if res.Unit == "plat-ue2-dev/boom" {
			require.ErrorIs(t, res.Err, ErrPanic)
			require.ErrorContains(t, res.Err, "generator bug")
			continue
		}
		require.Equal(t, Succeeded, res.Status)
	}
}

// TestStacksFilesBesideRootModule: a component with Terraform Stacks
// files (*.tfcomponent.hcl, *.tfstack.hcl) beside its .tf files plans
// as plain terraform plans it (terraform ignores those files in a root
// module); before, the module walk panicked and took the host with it.
func TestStacksFilesBesideRootModule(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "stacked", `resource "terraform_data" "a" { input = "x" }`)
	writeTestFile(t, filepath.Join(src, "app.tfcomponent.hcl"), "component \"c\" {\n  source = \"./\"\n}\n")
	writeTestFile(t, filepath.Join(src, "deploy.tfstack.hcl"), "deployment \"d\" {\n  inputs = {}\n}\n")

	plain := t.TempDir()
	require.NoError(t, os.CopyFS(plain, os.DirFS(src)))
	for _, args := range [][]string{{"init", "-input=false"}, {"plan", "-input=false", "-detailed-exitcode"}} {
		cmd := exec.Command(testenv.Terraform(t), args...)
		cmd.Dir = plain
		out, err := cmd.CombinedOutput()
		if args[0] == "plan" {
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, 2, ee.ExitCode(), "plain terraform plans one change: %s", out)
			continue
		}
		require.NoError(t, err, "%s", out)
	}

	rep, err := w.runner(t).Run(testCtx(t), Plan, Unit{Workdir: workdirSpec("plat-ue2-dev", "stacked", src, nil)})
	require.NoError(t, err)
	require.True(t, rep.Results[0].HasChanges, "planned like plain terraform")
}
