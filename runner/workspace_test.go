package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestEnginesDashWorkspaceAndLockID runs a unit in workspace "-h" and
// force-unlocks lock ID "-h", under each engine: "--" goes before the
// name and the ID, so the engine never reads them as its help flag. The
// apply lands in workspace "-h" (not in default, which is what printing
// help and exiting 0 gave), and releasing a lock that does not exist
// fails instead of reporting a lock released.
func TestEnginesDashWorkspaceAndLockID(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		const inst = "item/dash"
		u := w.unit(t, inst, fixture(t, "item"), map[string]any{"name": inst}, "dash")
		u.Workspace = "-h"
		r := w.runner(t)

		for range 2 { // the second run finds "-h" selected already
			rep, err := r.Run(testCtx(t), Apply, u)
			require.NoError(t, err)
			require.Equal(t, Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
		}
		require.NoFileExists(t, w.statePath("dash"), "the apply must not land in the default workspace")
		home, err := w.wd.Home("plat-ue2-dev", inst)
		require.NoError(t, err)
		var states, envs []string
		require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			slash := filepath.ToSlash(p)
			switch {
			case strings.HasSuffix(slash, "terraform.tfstate.d/-h/terraform.tfstate"):
				states = append(states, p)
			case d.Name() == "environment":
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				envs = append(envs, strings.TrimSpace(string(b)))
			}
			return nil
		}))
		require.Len(t, states, 1, "the state of workspace -h")
		require.Len(t, stateResources(t, states[0]), 2)
		require.Equal(t, []string{"-h"}, envs, "the data dir records workspace -h")

		err = r.ForceUnlock(testCtx(t), u, "-h")
		require.Error(t, err, "no lock -h is held: force-unlock must not succeed")
		require.NotContains(t, err.Error(), "Usage:", "the ID was read as a flag")
	})
}

// TestWorkspaceCheckedAfterSelect: a workspace select that exits 0 but
// leaves another workspace selected fails the unit with ErrWorkspace,
// naming both workspaces, and the command never runs.
func TestWorkspaceCheckedAfterSelect(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	tf, calls := fakeTerraform(t, `
case "$1" in
init) exit 0;;
workspace) echo "Usage: terraform workspace select NAME"; exit 0;;
esac
echo "unexpected: $*" >&2; exit 1
`)
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithRetry(RetryPolicy{}))
	require.NoError(t, err)
	u := Unit{Workspace: "-h", Workdir: workdirSpec("plat-ue2-dev", "ws-check", src, nil)}
	rep, err := r.Run(testCtx(t), Apply, u)
	require.ErrorIs(t, err, ErrWorkspace)
	require.ErrorIs(t, rep.Results[0].Err, ErrWorkspace)
	require.ErrorContains(t, rep.Results[0].Err, `"-h" asked for, "default" selected`)
	got := calls()
	require.Len(t, got, 2, "%q", got)
	require.Equal(t, "workspace select -or-create=true -- -h", got[1])
}
