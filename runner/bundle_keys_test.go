package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestPlanBundleKeys: a key is all or nothing on both sides. An empty
// non-nil key (os.Getenv of an unset secret) is refused by ExportPlan
// and ImportPlan before anything runs, naming the key; a bundle exported
// with a key is refused by an import without one, and one exported
// without a key by an import with one (a downgrade), each saying what
// to do, with nothing written; the same key on both sides imports and
// applies.
func TestPlanBundleKeys(t *testing.T) {
	e := testenv.Engine{Kind: engine.Terraform, Path: testenv.Terraform(t)}
	w := newEngineWorld(t, e)
	srv := testbackend.StartHTTPState(t)
	fix := fixture(t, "item")
	a, b := newMachine(t, w, "a", fix), newMachine(t, w, "b", fix)
	ua, ub := a.units(t, srv)[0], b.units(t, srv)[0]
	keyed, plain := filepath.Join(w.dir, "keyed"), filepath.Join(w.dir, "plain")
	key := []byte("fleet-bundle-key")

	_, err := a.runner.Run(testCtx(t), SavePlan, ua)
	require.NoError(t, err)
	for _, cmd := range []Command{ExportPlan(keyed, []byte{}), ExportPlan(keyed, []byte(os.Getenv("TFISOLATE_UNSET_PLAN_KEY"))), ImportPlan(keyed, []byte(""))} {
		rep, err := a.runner.Run(testCtx(t), cmd, ua)
		require.ErrorIs(t, err, ErrBadOption, cmd.String())
		require.ErrorContains(t, err, "key is empty", cmd.String())
		require.Nil(t, rep, "%s: nothing ran", cmd)
	}
	require.NoFileExists(t, BundlePath(keyed, ua.Workdir.Stack+"/"+ua.Workdir.Instance))

	_, err = a.runner.Run(testCtx(t), ExportPlan(keyed, key), ua)
	require.NoError(t, err)
	_, err = a.runner.Run(testCtx(t), ExportPlan(plain, nil), ua)
	require.NoError(t, err)

	_, err = b.runner.Run(testCtx(t), ImportPlan(keyed, nil), ub)
	require.ErrorIs(t, err, ErrPlanBundle)
	require.ErrorContains(t, err, "exported with a key")
	require.ErrorContains(t, err, "give ImportPlan the key")
	_, err = b.runner.Run(testCtx(t), ImportPlan(plain, key), ub)
	require.ErrorIs(t, err, ErrPlanBundle)
	require.ErrorContains(t, err, "exported without a key")
	require.ErrorContains(t, err, "ExportPlan")
	_, err = b.runner.Run(testCtx(t), ApplyPlan, ub)
	require.ErrorIs(t, err, ErrNoPlan, "a refused bundle left no plan behind")

	_, err = b.runner.Run(testCtx(t), ImportPlan(keyed, key), ub)
	require.NoError(t, err)
	rep, err := b.runner.Run(testCtx(t), ApplyPlan, ub)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Results[0].Summary.Add)
}

// TestPlanBundleApplyOnlyCLIArgs: what terraform reads only when it
// applies cannot change a saved plan, so a TF_CLI_ARGS_apply set in the
// apply job alone (machine B) neither makes A's bundle stale nor B's
// import refuse it; B's real terraform applies the plan with it. What
// the plan was made from still counts: TF_CLI_ARGS_plan or TF_CLI_ARGS
// differing on B refuse the bundle as stale, naming them.
func TestPlanBundleApplyOnlyCLIArgs(t *testing.T) {
	e := testenv.Engine{Kind: engine.Terraform, Path: testenv.Terraform(t)}
	w := newEngineWorld(t, e)
	srv := testbackend.StartHTTPState(t)
	fix := fixture(t, "item")
	a, b := newMachine(t, w, "a", fix), newMachine(t, w, "b", fix)
	ua, ub := a.units(t, srv)[0], b.units(t, srv)[0]
	artifacts := filepath.Join(w.dir, "artifacts")
	key := []byte("fleet-bundle-key")

	_, err := a.runner.Run(testCtx(t), SavePlan, ua)
	require.NoError(t, err)
	_, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, key), ua)
	require.NoError(t, err)

	for _, k := range []string{"TF_CLI_ARGS_plan", "TF_CLI_ARGS"} {
		t.Setenv(k, "-parallelism=3")
		_, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, key), ub)
		require.ErrorIs(t, err, ErrStalePlan, k)
		require.ErrorContains(t, err, "TF_CLI_ARGS", k)
		require.NoError(t, os.Unsetenv(k))
	}

	t.Setenv("TF_CLI_ARGS_apply", "-parallelism=3")
	t.Setenv("TF_CLI_ARGS_output", "-no-color")
	_, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, key), ub)
	require.NoError(t, err, "an apply job's own TF_CLI_ARGS_apply does not make the plan stale")
	rep, err := b.runner.Run(testCtx(t), ApplyPlan, ub)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Results[0].Summary.Add)
}
