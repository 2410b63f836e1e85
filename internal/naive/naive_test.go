//go:build unix

package naive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/internal/naive"
	"github.com/tfisolate/tfisolate/internal/testenv"
	"github.com/tfisolate/tfisolate/internal/testprovider"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testprovider.Cleanup()
	os.Exit(code)
}

// The workaround and sequential runs succeed on every instance, and every
// approach reports one outcome per instance with its figures.
func TestApproachesReportEveryInstance(t *testing.T) {
	tf := testenv.Terraform(t)
	dir := t.TempDir()
	source, err := demo.WriteInfra(filepath.Join(dir, "infra"))
	require.NoError(t, err)
	prov, err := demo.ServeProvider(filepath.Join(dir, "provider"), 0)
	require.NoError(t, err)
	t.Cleanup(prov.Close)

	for _, a := range []naive.Approach{naive.Preinit, naive.Sequential, naive.Shared} {
		t.Run(a.String(), func(t *testing.T) {
			res, err := naive.Run(context.Background(), naive.Config{
				Terraform: tf,
				Source:    filepath.Join(dir, "infra"),
				Component: demo.Component,
				Scratch:   t.TempDir(),
				Instances: 3,
				CLIConfig: prov.TerraformCLIConfig(),
				Env:       append(os.Environ(), prov.TerraformEnv()...),
				Vars:      func(i int) []byte { return demo.VarsJSON(i+1, 0) },
				Files:     func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
			}, a)
			require.NoError(t, err)
			require.Len(t, res.Outcomes, 3)
			for i, oc := range res.Outcomes {
				require.Equal(t, i+1, oc.Instance)
			}
			require.Positive(t, res.Wall)
			require.Positive(t, res.DiskBytes)
			if a != naive.Shared { // the shared dir is expected to lose some
				require.Equal(t, 3, res.Succeeded, "%+v", res.Outcomes)
				require.Positive(t, res.CPU)
			}
			// The component source was copied, never used in place.
			entries, err := os.ReadDir(source)
			require.NoError(t, err)
			for _, e := range entries {
				require.Equal(t, ".tf", filepath.Ext(e.Name()), "run wrote %s into the source", e.Name())
			}
		})
	}
}
