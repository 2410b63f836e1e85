//go:build unix

package naive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/harness/naive"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
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

// A committed lock file lets the workaround take the provider from a warm
// plugin cache (no download), and Rerun runs the same instances again on
// the state and data dirs the first run left.
func TestLockFileAndRerun(t *testing.T) {
	tf := testenv.Terraform(t)
	dir := t.TempDir()
	_, err := demo.WriteInfra(filepath.Join(dir, "infra"))
	require.NoError(t, err)
	prov, err := demo.ServeProvider(filepath.Join(dir, "provider"), 0)
	require.NoError(t, err)
	t.Cleanup(prov.Close)
	cache := t.TempDir()
	cfg := func(scratch string) naive.Config {
		return naive.Config{
			Terraform:      tf,
			Source:         filepath.Join(dir, "infra"),
			Component:      demo.Component,
			Scratch:        scratch,
			Instances:      2,
			CLIConfig:      prov.TerraformCLIConfig(),
			Env:            append(os.Environ(), prov.TerraformEnv()...),
			Vars:           func(i int) []byte { return demo.VarsJSON(i+1, 0) },
			Files:          func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
			PluginCacheDir: cache,
		}
	}
	ctx := context.Background()

	first := t.TempDir()
	res, err := naive.Run(ctx, cfg(first), naive.Preinit)
	require.NoError(t, err)
	require.Equal(t, 2, res.Succeeded, "%+v", res.Outcomes)
	lock, err := os.ReadFile(filepath.Join(first, "src", filepath.FromSlash(demo.Component), ".terraform.lock.hcl"))
	require.NoError(t, err)

	second := t.TempDir()
	c := cfg(second)
	c.LockFile = lock
	d0 := prov.Downloads()
	res, err = naive.Run(ctx, c, naive.Preinit)
	require.NoError(t, err)
	require.Equal(t, 2, res.Succeeded, "%+v", res.Outcomes)
	require.Equal(t, d0, prov.Downloads(), "with the lock file the warm cache serves the provider")
	statePath := filepath.Join(second, "state", "1.tfstate")
	before, err := os.ReadFile(statePath)
	require.NoError(t, err)

	c.Rerun = true
	res, err = naive.Run(ctx, c, naive.Preinit)
	require.NoError(t, err)
	require.Equal(t, 2, res.Succeeded, "%+v", res.Outcomes)
	require.Equal(t, d0, prov.Downloads())
	after, err := os.ReadFile(statePath)
	require.NoError(t, err)
	require.Equal(t, before, after, "an unchanged re-apply keeps the state as it was")

	c.Scratch = t.TempDir()
	_, err = naive.Run(ctx, c, naive.Preinit)
	require.ErrorContains(t, err, "no earlier run there")
}
