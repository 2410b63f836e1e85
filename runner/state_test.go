package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/workdir"
)

// An emptied (0-byte) and a cut-off state with a backup beside it are
// refused by Plan, Apply and Destroy, under each engine, with the typed
// error naming the file and the backup; nothing runs and the files stay
// as they are. A new instance with a 0-byte state and no backup is not
// refused.
func TestEnginesDamagedStateRefused(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		src := fixture(t, "item")
		ctx := testCtx(t)
		r := w.runner(t)
		u := w.unit(t, "item/damaged", src, map[string]any{"name": "damaged"}, "damaged")
		_, err := r.Run(ctx, Apply, u)
		require.NoError(t, err)
		state := w.statePath("damaged")
		good := readFile(t, state)
		require.NoError(t, os.WriteFile(state+".backup", []byte(good), 0o600))

		for _, damaged := range []struct{ name, content string }{{"empty", ""}, {"cut off", good[:len(good)/2]}} {
			require.NoError(t, os.WriteFile(state, []byte(damaged.content), 0o600))
			for _, cmd := range []Command{Plan, Apply, Destroy} {
				rep, err := r.Run(ctx, cmd, u)
				require.Error(t, err, "%s: %s", damaged.name, cmd)
				res := rep.Results[0]
				require.Equal(t, Failed, res.Status, "%s: %s", damaged.name, cmd)
				require.ErrorIs(t, res.Err, ErrStateDamaged, "%s: %s", damaged.name, cmd)
				require.ErrorIs(t, res.Err, workdir.ErrStateDamaged)
				var de *workdir.DamagedStateError
				require.ErrorAs(t, res.Err, &de)
				require.Equal(t, state, de.File)
				require.Equal(t, state+".backup", de.Backup)
				require.Contains(t, res.Err.Error(), state+".backup")
				require.NotContains(t, res.Err.Error(), "locked")
				require.Equal(t, damaged.content, readFile(t, state), "%s: %s ran nothing", damaged.name, cmd)
				require.Equal(t, good, readFile(t, state+".backup"), "the backup is not touched")
				b, err := json.Marshal(rep)
				require.NoError(t, err)
				require.Contains(t, string(b), "is damaged", "the JSON report carries the error")
			}
		}

		// A new instance whose first run was killed holding the state
		// lock: a 0-byte state, no backup, no record.
		fresh := w.unit(t, "item/fresh", src, map[string]any{"name": "fresh"}, "fresh")
		require.NoError(t, os.WriteFile(w.statePath("fresh"), nil, 0o600))
		rep, err := r.Run(ctx, Plan, fresh)
		require.NoError(t, err)
		require.True(t, rep.Results[0].HasChanges)
	})
}

// A root module applied with plain terraform keeps its state in the
// component dir: the runner refuses its instance, naming that file and
// its two resources; adopted (Spec.AdoptState), the instance plans no
// changes, as plain terraform does in the component dir. A second
// instance asking to adopt the same state fails, naming the first as its
// owner, and runs nothing.
func TestSourceStateRefusedThenAdopted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testCtx(t)
	src := w.component(t, "adopt", itemComponent+`resource "terraform_data" "meta" { input = var.name }`+"\n")
	require.NoError(t, os.WriteFile(filepath.Join(src, "terraform.tfvars"), []byte(`name = "adopted"`+"\n"), 0o644))

	// Plain terraform, as the user ran it before, installing the test
	// provider from a filesystem mirror.
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, testprovider.Build(t), providerVersion)
	env := testenv.TerraformEnv(testprovider.WriteCLIConfig(t, testprovider.CLIConfigFilesystemMirror(mirror)))
	plain := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, w.tf, args...)
		cmd.Dir, cmd.Env = src, env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err, "%s", out)
		return 0, string(out)
	}
	for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
		code, out := plain(args...)
		require.Zero(t, code, out)
	}
	code, out := plain("plan", "-detailed-exitcode", "-input=false", "-no-color")
	require.Zero(t, code, "plain terraform plans no changes: %s", out)
	srcState := filepath.Join(src, "terraform.tfstate")
	before := readFile(t, srcState)

	r := w.runner(t)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "adopt/one", src, nil)}
	rep, err := r.Run(ctx, Plan, u)
	require.Error(t, err)
	res := rep.Results[0]
	require.Equal(t, Failed, res.Status)
	require.ErrorIs(t, res.Err, ErrSourceState)
	require.ErrorIs(t, res.Err, workdir.ErrSourceState)
	require.Contains(t, res.Err.Error(), srcState+" (2 resources)")

	u.Workdir.AdoptState = true
	rep, err = r.Run(ctx, Plan, u)
	require.NoError(t, err)
	require.False(t, rep.Results[0].HasChanges, "the adopted instance plans no changes, as plain terraform does")
	require.Equal(t, before, readFile(t, srcState), "the source's state is only read")
	code, out = plain("plan", "-detailed-exitcode", "-input=false", "-no-color")
	require.Zero(t, code, "and plain terraform still agrees: %s", out)

	two := Unit{Workdir: workdirSpec("plat-ue2-dev", "adopt/two", src, nil)}
	two.Workdir.AdoptState = true
	rep, err = r.Run(ctx, Plan, two)
	require.Error(t, err)
	res = rep.Results[0]
	require.Equal(t, Failed, res.Status)
	require.ErrorIs(t, res.Err, ErrAdopted)
	require.ErrorIs(t, res.Err, ErrSourceState)
	var ae *workdir.AdoptedError
	require.ErrorAs(t, res.Err, &ae)
	require.Equal(t, workdir.Owner{Stack: "plat-ue2-dev", Instance: "adopt/one", ID: ae.Owner.ID, Source: srcState,
		Lineage: ae.Owner.Lineage, Time: ae.Owner.Time}, ae.Owner)
	require.Contains(t, res.Err.Error(), "instance plat-ue2-dev/adopt/one adopted it already")
	home, err := w.wd.Home("plat-ue2-dev", "adopt/two")
	require.NoError(t, err)
	require.NoFileExists(t, filepath.Join(home, "src", "terraform.tfstate"), "nothing was copied")
	rep, err = r.Run(ctx, Plan, u)
	require.NoError(t, err, "the owner runs on")
	require.False(t, rep.Results[0].HasChanges)
}
