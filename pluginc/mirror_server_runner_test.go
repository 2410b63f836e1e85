package pluginc_test

import (
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestRunnerAppliesFromMirror: the runner applies twelve instances with
// a provider cache whose only source is a MirrorHandler over loopback
// HTTPS (the mirror's own cache filled from the loopback registry): every
// instance succeeds, all twelve lock files are one, and the registry
// served one download.
func TestRunnerAppliesFromMirror(t *testing.T) {
	testenv.Terraform(t) // skips, or fails under CI, without terraform
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := demo.SetupOffline(ctx, t.TempDir(), 0)
	require.NoError(t, err)
	defer o.Close()
	upstream, err := o.Provider.OpenCache(t.TempDir())
	require.NoError(t, err)
	srv := httptest.NewTLSServer(upstream.MirrorHandler())
	defer srv.Close()

	cache, err := pluginc.Open(t.TempDir(), pluginc.WithSource(pluginc.NetworkMirror(srv.URL+"/")), pluginc.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	wds, err := workdir.New(t.TempDir())
	require.NoError(t, err)
	r, err := runner.New(runner.WithWorkdirs(wds), runner.WithPluginCache(cache), runner.WithTerraform(o.Terraform), runner.WithParallelism(12))
	require.NoError(t, err)
	rep, err := r.Run(ctx, runner.Apply, demo.Units(o.Source(demo.Component), 12, 0)...)
	require.NoError(t, err)
	require.Equal(t, 12, rep.Count(runner.Succeeded))
	require.Equal(t, 1, o.Provider.Downloads(), "one upstream download")
	require.Equal(t, int64(1), cache.Stats().Downloads, "one download from the mirror")

	var locks []string
	require.NoError(t, filepath.WalkDir(wds.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == ".terraform.lock.hcl" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			locks = append(locks, string(b))
		}
		return err
	}))
	require.Len(t, locks, 12)
	for _, l := range locks {
		require.Equal(t, locks[0], l)
	}
}
