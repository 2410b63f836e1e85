package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// partialBackendComponent declares a local backend and leaves its
// settings to -backend-config.
const partialBackendComponent = `
terraform {
  backend "local" {}
}
resource "terraform_data" "x" { input = "x" }
`

// TestPartialBackendConfig completes an empty backend block with
// -backend-config, as a KEY=VALUE pair and as a generated file: the state
// lands where the configuration says, not in the workdir.
func TestPartialBackendConfig(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "partial", partialBackendComponent)
	states := filepath.Join(w.dir, "states")
	pairState := filepath.Join(states, "pair.tfstate")
	fileState := filepath.Join(states, "file.tfstate")
	units := []Unit{
		{Workdir: workdirSpec("plat-ue2-dev", "partial/pair", src, nil),
			Args: Args{BackendConfig: []string{"path=" + pairState}}},
		{Workdir: workdirSpec("plat-ue2-dev", "partial/file", src, map[string][]byte{"backend.hcl": []byte("path = \"" + fileState + "\"\n")}),
			Args: Args{BackendConfig: []string{"backend.hcl"}}},
	}
	r := w.runner(t)
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	for i, state := range []string{pairState, fileState} {
		require.Equal(t, Succeeded, rep.Results[i].Status)
		require.Contains(t, stateResources(t, state), "terraform_data.x", "state of %s", rep.Results[i].Unit)
		home, err := w.wd.Home(units[i].Workdir.Stack, units[i].Workdir.Instance)
		require.NoError(t, err)
		// The data dir's terraform.tfstate is the backend settings, not state.
		require.Empty(t, findFiles(t, home, "terraform.tfstate", ".tfisolate"), "local state written in the workdir instead")
	}

	// The same configuration again: nothing to do, no init needed.
	rep, err = r.Run(testCtx(t), Plan, units...)
	require.NoError(t, err)
	for _, res := range rep.Results {
		require.False(t, res.HasChanges, "%s", res.Unit)
		require.True(t, res.InitSkipped, "%s", res.Unit)
	}
}

// TestChangedBackendAsAsked changes an instance's generated backend
// between two applies, with Reconfigure or MigrateState on the second
// (without either it is refused: TestBackendChangeRefused). Reconfigure
// runs init -reconfigure (no "Backend configuration changed" failure),
// says so in its log, and does not migrate state: the new state starts
// empty and gets a new resource, the old one is left as it was. With
// MigrateState the state moves.
func TestChangedBackendAsAsked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "pair", pairComponent)
	states := filepath.Join(w.dir, "states")

	for _, migrate := range []bool{false, true} {
		name := map[bool]string{false: "reconfigure", true: "migrate"}[migrate]
		t.Run(name, func(t *testing.T) {
			a := filepath.Join(states, name, "a.tfstate")
			b := filepath.Join(states, name, "b.tfstate")
			r := w.runner(t)
			unit := func(state string) Unit {
				return Unit{Workdir: workdirSpec("plat-ue2-dev", "backend/"+name, src, files(t, map[string]any{}, state)),
					Args: Args{MigrateState: migrate, Reconfigure: !migrate}}
			}
			_, err := r.Run(testCtx(t), Apply, unit(a))
			require.NoError(t, err)
			before := readFile(t, a)
			idA := stateResources(t, a)["terraform_data.a"]["id"]

			rep, err := r.Run(testCtx(t), Apply, unit(b))
			require.NoError(t, err)
			res := rep.Results[0]
			require.Equal(t, Succeeded, res.Status)
			log := readFile(t, res.Log)
			require.Contains(t, log, map[bool]string{false: "reconfiguring as asked", true: "migrating the state"}[migrate])
			require.NotContains(t, log, "Error: Backend configuration changed")
			idB := stateResources(t, b)["terraform_data.a"]["id"]
			if migrate {
				require.Equal(t, idA, idB, "state was not migrated")
				require.Contains(t, log, "Apply complete! Resources: 0 added")
				return
			}
			require.NotNil(t, idB)
			require.NotEqual(t, idA, idB, "state was migrated without MigrateState")
			require.Contains(t, log, "Apply complete! Resources: 2 added")
			require.Equal(t, before, readFile(t, a), "the old state was touched")
		})
	}

	// A changed -backend-config value is a changed backend too.
	t.Run("backend-config", func(t *testing.T) {
		src := w.component(t, "partial", partialBackendComponent)
		a := filepath.Join(states, "bc", "a.tfstate")
		b := filepath.Join(states, "bc", "b.tfstate")
		r := w.runner(t)
		unit := func(state string) Unit {
			return Unit{Workdir: workdirSpec("plat-ue2-dev", "backend/bc", src, nil), Args: Args{BackendConfig: []string{"path=" + state}, Reconfigure: true}}
		}
		_, err := r.Run(testCtx(t), Apply, unit(a))
		require.NoError(t, err)
		rep, err := r.Run(testCtx(t), Apply, unit(b))
		require.NoError(t, err)
		require.Contains(t, readFile(t, rep.Results[0].Log), "reconfiguring")
		require.NotEqual(t, stateResources(t, a)["terraform_data.x"]["id"], stateResources(t, b)["terraform_data.x"]["id"])
	})
}

// findFiles returns the paths of files named name under dir, not
// looking into directories named skip.
func findFiles(t *testing.T, dir, name, skip string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == skip {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() == name {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// TestRootConfigReadOncePerUnit: the module fetch, the init check and an
// init run again after all share one reading of the root module (a file
// changed on disk in between is not read again), and the backend
// fingerprint comes from that reading.
func TestRootConfigReadOncePerUnit(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "main.tf")
	require.NoError(t, os.WriteFile(main, []byte(partialBackendComponent), 0o644))
	x := &unitRun{rs: &runState{eng: engine.Info{Kind: engine.Terraform, Version: version.Must(version.NewVersion("1.11.4"))}}, u: &Unit{}, dir: dir}
	first, err := x.readRootConfig()
	require.NoError(t, err)
	require.Len(t, first.files, 1)
	require.NotEmpty(t, backendFingerprint(first, dir, nil))

	require.NoError(t, os.WriteFile(main, []byte(`resource "terraform_data" "x" { input = "y" }`), 0o644))
	again, err := x.readRootConfig()
	require.NoError(t, err)
	require.Same(t, first, again, "read once per unit")
	require.Equal(t, partialBackendComponent, string(again.files[0].Data))

	// Another unit reads the files as they are now.
	other, err := (&unitRun{rs: x.rs, u: &Unit{}, dir: dir}).readRootConfig()
	require.NoError(t, err)
	require.Empty(t, backendFingerprint(other, dir, nil))
}
