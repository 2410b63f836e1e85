package runner

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
)

func stateLineage(t *testing.T, path string) string {
	t.Helper()
	var st struct {
		Lineage string `json:"lineage"`
	}
	require.NoError(t, json.Unmarshal(readFileBytes(t, path), &st))
	require.NotEmpty(t, st.Lineage, path)
	return st.Lineage
}

// TestBackendChangeRefused moves an applied instance's local state path
// in its generated backend, as a typo or a moved key would. Apply and
// Plan are refused with ErrBackendChanged naming both paths, and nothing
// is written at the new one; with MigrateState the state moves (same
// lineage: nothing created again); once the state holds no resources, a
// change is taken by itself.
func TestBackendChangeRefused(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "item", itemComponent)
	r := w.runner(t)
	a, b, c := filepath.Join(w.dir, "a.tfstate"), filepath.Join(w.dir, "b.tfstate"), filepath.Join(w.dir, "c.tfstate")
	unit := func(state string, args Args) Unit {
		return Unit{Args: args, Workdir: workdirSpec("plat-ue2-dev", "moved", src, files(t, map[string]any{"name": "moved"}, state))}
	}
	_, err := r.Run(testCtx(t), Apply, unit(a, Args{}))
	require.NoError(t, err)
	lineage := stateLineage(t, a)

	for _, cmd := range []Command{Apply, Plan} {
		rep, err := r.Run(testCtx(t), cmd, unit(b, Args{}))
		require.ErrorIs(t, err, ErrBackendChanged, "%s", cmd)
		var be *BackendChangedError
		require.ErrorAs(t, rep.Results[0].Err, &be)
		require.Contains(t, be.Old, a)
		require.Contains(t, be.New, b)
		require.NoFileExists(t, b, "nothing ran against the new backend")
	}
	require.Contains(t, stateResources(t, a), "tfitest_item.this")

	_, err = r.Run(testCtx(t), Apply, unit(b, Args{MigrateState: true}))
	require.NoError(t, err)
	require.Equal(t, lineage, stateLineage(t, b), "the state moved; nothing was created in a new one")
	require.Contains(t, stateResources(t, b), "tfitest_item.this")

	// Destroyed, the state holds nothing: a change needs no word.
	_, err = r.Run(testCtx(t), Destroy, unit(b, Args{}))
	require.NoError(t, err)
	_, err = r.Run(testCtx(t), Apply, unit(c, Args{}))
	require.NoError(t, err)
	require.Contains(t, stateResources(t, c), "tfitest_item.this")
}

// TestBackendChangeRemoteRefused renames an instance's http state: the
// old state cannot be read without its old configuration, so the change
// is refused until Reconfigure says to take the new backend as it is.
func TestBackendChangeRemoteRefused(t *testing.T) {
	w := newWorld(t)
	srv := testbackend.StartHTTPState(t)
	src := w.component(t, "item", itemComponent)
	r := w.runner(t)
	unit := func(name string, args Args) Unit {
		return Unit{Args: args, Workdir: workdirSpec("plat-ue2-dev", "remote", src, map[string][]byte{
			"backend.tf.json": srv.BackendJSON(name), "terraform.tfvars.json": []byte(`{"name":"remote"}`)})}
	}
	_, err := r.Run(testCtx(t), Apply, unit("one", Args{}))
	require.NoError(t, err)
	_, err = r.Run(testCtx(t), Apply, unit("two", Args{}))
	require.ErrorIs(t, err, ErrBackendChanged)
	require.ErrorContains(t, err, "/state/one")
	require.ErrorContains(t, err, "/state/two")
	_, ok := srv.State("two")
	require.False(t, ok, "nothing was applied into the new state")
	_, err = r.Run(testCtx(t), Apply, unit("two", Args{Reconfigure: true}))
	require.NoError(t, err)
	_, ok = srv.State("two")
	require.True(t, ok)
}
