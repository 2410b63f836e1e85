package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestStateAtResolvedPath: a local backend path that only the engine's
// init resolves (OpenTofu building it from a variable,
// "state-${var.env}.data"; terraform given it with -backend-config), at a
// name that does not look like state, is the instance's state, known
// from what the engine recorded at that init: a refresh after the
// component changed, now holding a file of that name, never copies it
// over the applied state; a cut-off write there is refused before the
// engine runs; Remove without force refuses the instance.
func TestStateAtResolvedPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine func(t *testing.T) testenv.Engine
		main   string
		args   Args
	}{
		{"tofu variable", func(t *testing.T) testenv.Engine { return testenv.Engine{Kind: engine.OpenTofu, Path: testenv.Tofu(t)} },
			`variable "env" { type = string }
terraform {
  backend "local" { path = "state-${var.env}.data" }
}
resource "terraform_data" "x" { input = var.env }
`, Args{Vars: map[string]string{"env": "dev"}}},
		{"terraform backend-config", func(t *testing.T) testenv.Engine {
			return testenv.Engine{Kind: engine.Terraform, Path: testenv.Terraform(t)}
		},
			`terraform {
  backend "local" {}
}
resource "terraform_data" "x" { input = "dev" }
`, Args{BackendConfig: []string{"path=state-dev.data"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newEngineWorld(t, tc.engine(t))
			src := filepath.Join(w.dir, "components", "varpath")
			writeTree(t, src, map[string]string{"main.tf": tc.main})
			r := w.runner(t)
			u := Unit{Args: tc.args, Workdir: workdirSpec("plat-ue2-dev", "varpath", src, nil)}
			_, err := r.Run(testCtx(t), Apply, u)
			require.NoError(t, err)
			home, err := w.wd.Home("plat-ue2-dev", "varpath")
			require.NoError(t, err)
			var state string
			require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Name() == "state-dev.data" {
					state = p
				}
				return err
			}))
			require.NotEmpty(t, state, "the engine kept the state at the resolved path")
			applied := readFile(t, state)
			require.Contains(t, applied, `"terraform_data"`)

			// The component changes and now holds a file at that path (an
			// old state someone left there): the refresh keeps the
			// instance's own.
			writeTree(t, src, map[string]string{
				"main.tf":        tc.main + "\n# changed\n",
				"state-dev.data": `{"version": 4, "serial": 1, "lineage": "someone-else", "resources": []}`,
			})
			rep, err := r.Run(testCtx(t), Plan, u)
			require.NoError(t, err)
			require.Equal(t, applied, readFile(t, state), "the refresh left the applied state alone")
			require.False(t, rep.Results[0].HasChanges, "the plan reads the applied state: nothing to do")

			// A cut-off write there is refused before the engine runs.
			require.NoError(t, os.WriteFile(state, []byte(applied[:len(applied)/2]), 0o600))
			_, err = r.Run(testCtx(t), Plan, u)
			require.ErrorIs(t, err, ErrStateDamaged)
			require.ErrorContains(t, err, state)
			require.NoError(t, os.WriteFile(state, []byte(applied), 0o600))

			require.ErrorIs(t, w.wd.Remove(testCtx(t), "plat-ue2-dev", "varpath", false), workdir.ErrHasState, "the state at the resolved path holds a resource")
			_, err = os.Stat(state)
			require.NoError(t, err, "Remove without force left the state")
		})
	}
}
