//go:build unix

package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestDefaultPathsAreSafe checks the paths docs/security.md
// documents, under a user cache dir that does not exist yet: every dir
// the SDK shares between runs and processes (the plugin cache, the
// workdir root, the module store beside the cache, the terraform install
// dir the runner defaults to) is created 0700, the cache dir above them
// too, and each passes the one ownership check. Opened to its group, the
// same cache dir makes each of them refuse by name.
func TestDefaultPathsAreSafe(t *testing.T) {
	base := filepath.Join(t.TempDir(), "cache")
	t.Setenv("XDG_CACHE_HOME", base)                     // Linux and the BSDs
	t.Setenv("HOME", filepath.Join(t.TempDir(), "home")) // macOS: HOME/Library/Caches
	userCache, err := os.UserCacheDir()
	require.NoError(t, err)
	if userCache != base {
		base = userCache
	}
	top := filepath.Join(base, "tfisolate")
	plugins, workdirs := filepath.Join(top, "plugins"), filepath.Join(top, "workdirs")

	open := func() (*pluginc.Cache, *workdir.Manager, *Runner, error, error) {
		cache, cerr := pluginc.Open(plugins)
		wd, werr := workdir.New(workdirs)
		if cerr != nil || werr != nil {
			return nil, nil, nil, cerr, werr
		}
		r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform("/nonexistent/terraform"))
		require.NoError(t, err)
		return cache, wd, r, nil, nil
	}
	cache, _, r, cerr, werr := open()
	require.NoError(t, cerr)
	require.NoError(t, werr)
	store, err := r.cfg.openModuleStore()
	require.NoError(t, err)
	require.NotNil(t, store, "the default module store beside a private cache is used")
	require.Equal(t, filepath.Join(cache.Dir(), ".modules"), r.cfg.moduleStoreDir())
	install := defaultInstallDir()
	require.Equal(t, filepath.Join(top, "terraform"), install)
	require.NoError(t, engine.MakeInstallDir(install))

	for _, d := range []string{base, top, plugins, workdirs, r.cfg.moduleStoreDir(), install} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "%s is not private", d)
	}

	// The same paths under a cache dir its group can write: refused.
	require.NoError(t, os.Chmod(base, 0o770))
	_, _, _, cerr, werr = open()
	require.ErrorIs(t, cerr, pluginc.ErrUnsafePath)
	require.ErrorContains(t, cerr, base)
	require.ErrorIs(t, werr, workdir.ErrUnsafePath)
	require.ErrorContains(t, werr, base)
	_, err = modstore.Open(r.cfg.moduleStoreDir())
	require.ErrorIs(t, err, modstore.ErrUnsafePath)
	require.ErrorIs(t, engine.MakeInstallDir(install), engine.ErrUnsafeInstallDir)
}
