//go:build unix

package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// TestRemoteModulesAcrossProcesses: four OS processes, each with its own
// workdir root (four CI agents) but one plugin cache and so one module
// store, apply the same component at once: its remote module is fetched
// once for all of them. Then a process killed while it fetches leaves
// nothing a later run uses: the next run fetches again and succeeds, and
// no temp files are left in the store.
func TestRemoteModulesAcrossProcesses(t *testing.T) {
	w := newWorld(t)
	ms := startModuleServer(t, map[string]string{"main.tf": redisModule})
	src := w.component(t, "redis", remoteComponent(ms.source()))

	// Warm the provider cache and get a lock file to commit, so the
	// children need no registry (they have no client for it). The store
	// is off for this run: it must not fill the store.
	warm := Unit{Workdir: workdirSpec("plat-ue2-dev", "warm", src, files(t, map[string]any{"name": "warm"}, filepath.Join(w.dir, "warm.tfstate")))}
	_, err := w.runner(t, WithModuleStore("-")).Run(testCtx(t), Apply, warm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(src, lockFileName), lockFileOf(t, w, "plat-ue2-dev", "warm"), 0o644))
	require.EqualValues(t, 1, ms.downloads.Load())

	var children []*childproc.Proc
	for i := range 4 {
		inst := fmt.Sprintf("elasticache/redis-%d", i)
		children = append(children, startChild(t, childConfig{
			TF: w.tf, Root: filepath.Join(w.dir, fmt.Sprintf("agent-%d", i)), Cache: w.cache.Dir(),
			Spec: workdirSpec("plat-ue2-dev", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate"))),
		}, nil))
	}
	for _, c := range children {
		require.Equal(t, "succeeded", resultOf(t, c).Status)
	}
	require.EqualValues(t, 2, ms.downloads.Load(), "one fetch for the four processes")

	// Another set of module calls (another key), held at the server: the
	// process fetching it is killed mid-fetch.
	src2 := w.component(t, "redis2", remoteComponent(ms.source()+"?v=2"))
	require.NoError(t, os.WriteFile(filepath.Join(src2, lockFileName), lockFileOf(t, w, "plat-ue2-dev", "warm"), 0o644))
	ms.holding.Store(true)
	spec := workdirSpec("plat-ue2-dev", "killed", src2, files(t, map[string]any{"name": "k"}, filepath.Join(w.dir, "k.tfstate")))
	victim := startChild(t, childConfig{TF: w.tf, Root: filepath.Join(w.dir, "agent-k"), Cache: w.cache.Dir(), Spec: spec}, nil)
	select {
	case <-ms.requested:
	case <-victim.Done():
		t.Fatalf("the process ended before fetching: %s", victim.Output())
	}
	require.NoError(t, syscall.Kill(-victim.PID(), syscall.SIGKILL))
	<-victim.Done()
	close(ms.hold)

	next := startChild(t, childConfig{TF: w.tf, Root: filepath.Join(w.dir, "agent-n"), Cache: w.cache.Dir(), Spec: spec}, nil)
	require.Equal(t, "succeeded", resultOf(t, next).Status)
	require.EqualValues(t, 4, ms.downloads.Load(), "the killed fetch is not used: fetched again")
	leftovers, err := os.ReadDir(filepath.Join(w.cache.Dir(), ".modules", ".modstore", "tmp"))
	require.NoError(t, err)
	require.Empty(t, leftovers, "no temp files left in the module store")
}
