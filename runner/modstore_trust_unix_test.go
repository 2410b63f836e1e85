//go:build unix

package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestModuleStoreNeverInUnsafeDir: the module store is never defaulted
// into a dir that fails the ownership rule of invariant 12 (issue 22
// item 2): beside a plugin cache shared with a group (whose root the
// group can write) the Run goes without a store and creates nothing
// there; a WithModuleStore dir others can write is refused by name, and
// nothing runs.
func TestModuleStoreNeverInUnsafeDir(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "component")
	writeTestFile(t, filepath.Join(src, "main.tf"), `resource "terraform_data" "x" {}`)
	tf, calls := fakeTerraform(t, "exit 0\n")
	wd, err := workdir.New(filepath.Join(dir, "workdirs"))
	require.NoError(t, err)
	cache, err := pluginc.Open(filepath.Join(dir, "cache"), pluginc.WithSharedGroup(os.Getgid()))
	require.NoError(t, err)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "x", src, nil)}

	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(tf), WithRetry(RetryPolicy{}))
	require.NoError(t, err)
	_, err = r.Run(testCtx(t), Validate, u)
	require.NoError(t, err)
	require.NoDirExists(t, filepath.Join(cache.Dir(), ".modules"), "no module store in a dir the group can write")

	shared := filepath.Join(dir, "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chmod(shared, 0o777))
	calls()
	r, err = New(WithWorkdirs(wd), WithTerraform(tf), WithModuleStore(filepath.Join(shared, "modules")))
	require.NoError(t, err)
	_, err = r.Run(testCtx(t), Validate, u)
	require.ErrorIs(t, err, modstore.ErrUnsafePath)
	require.ErrorContains(t, err, shared+" (owner uid ")
	require.ErrorContains(t, err, "WithModuleStore")
	require.NoDirExists(t, filepath.Join(shared, "modules"))
	require.Empty(t, calls(), "nothing ran")
}
