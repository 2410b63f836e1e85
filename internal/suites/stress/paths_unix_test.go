//go:build unix

package stress

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestHostilePaths applies two instances with the workdir root, the
// provider cache and the component source all under a directory whose name
// breaks naive quoting or escaping. The SDK writes these paths into the CLI config
// (JSON) and hands them to terraform through the environment; every unit
// must still succeed.
func TestHostilePaths(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test; skipped under -short")
	}
	for _, tc := range []struct{ name, dir string }{
		{"quoting", `odd "q" \ 'a' ü $HOME`},
		{"template sequences", `odd ${x} %{y}`},
		{"control characters", "odd\nline\ttab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			odd := filepath.Join(w.dir, tc.dir)
			require.NoError(t, os.MkdirAll(odd, 0o755))
			source, err := demo.WriteInfra(filepath.Join(odd, "infra"))
			require.NoError(t, err)
			cache, err := w.prov.OpenCache(filepath.Join(odd, "plugin cache"))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			w.root = filepath.Join(odd, "work dirs")
			wds, err := workdir.New(w.root)
			require.NoError(t, err)
			r, err := runner.New(runner.WithWorkdirs(wds), runner.WithPluginCache(cache), runner.WithTerraform(w.tf), runner.WithParallelism(2))
			require.NoError(t, err)
			rep, err := r.Run(ctx, runner.Apply, demo.Units(source, 2, 0)...)
			if err != nil && rep != nil {
				for _, res := range rep.Results {
					log, _ := os.ReadFile(res.Log)
					t.Logf("%s: %s: %v\n%s", res.Unit, res.Status, res.Err, tail(log, 3000))
				}
			}
			require.NoError(t, err)
			require.Equal(t, 1, w.prov.TotalDownloads())
			w.requireStates(t, span(2))
		})
	}
}
