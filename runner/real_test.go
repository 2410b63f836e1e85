package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
)

// TestLeaderFailureIsEveryFollowersError breaks the registry so the
// singleflight leader's provider setup fails: every unit fails with
// ErrInit and the cause, the followers naming the leader they shared.
func TestLeaderFailureIsEveryFollowersError(t *testing.T) {
	w := newWorld(t)
	w.reg.SetFault(testregistry.FaultStatus500)
	src := w.component(t, "item", itemComponent)
	var units []Unit
	for _, inst := range []string{"a", "b", "c", "d"} {
		units = append(units, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate")))})
	}
	rep, err := w.runner(t, WithParallelism(4)).Run(testCtx(t), Apply, units...)
	require.ErrorIs(t, err, ErrInit)
	leaders := 0
	for _, res := range rep.Results {
		require.Equal(t, Failed, res.Status)
		require.ErrorIs(t, res.Err, ErrInit)
		require.Contains(t, res.Err.Error(), "500", "the cause is reported")
		if !strings.Contains(res.Err.Error(), "shared with plat-ue2-dev/") {
			leaders++
		}
		_, err := os.Stat(filepath.Join(w.dir, filepath.Base(res.Unit)+".tfstate"))
		require.ErrorIs(t, err, os.ErrNotExist, "terraform must not have applied")
	}
	require.Equal(t, 1, leaders, "one leader, three followers")
}

// TestWorkspacePlanDestroy runs one unit in a workspace through apply, a
// clean plan, destroy and a plan that has changes again.
func TestWorkspacePlanDestroy(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "item", itemComponent)
	u := Unit{Workspace: "blue", Workdir: workdirSpec("plat-ue2-dev", "ws", src,
		map[string][]byte{"terraform.tfvars.json": []byte(`{"name":"ws"}`)})}
	r := w.runner(t)
	steps := []struct {
		cmd     Command
		changes bool
	}{{Apply, true}, {Plan, false}, {Destroy, true}, {Plan, true}} // an apply-like command has changes when it changed something
	for _, s := range steps {
		rep, err := r.Run(testCtx(t), s.cmd, u)
		require.NoError(t, err, "%s", s.cmd)
		require.Equal(t, s.changes, rep.Results[0].HasChanges, "%s", s.cmd)
	}
	home, err := w.wd.Home("plat-ue2-dev", "ws")
	require.NoError(t, err)
	var states []string
	require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "terraform.tfstate" && !strings.Contains(p, ".tfisolate") {
			rel, _ := filepath.Rel(home, p)
			states = append(states, filepath.ToSlash(rel))
		}
		return err
	}))
	require.Len(t, states, 1)
	require.True(t, strings.HasSuffix(states[0], "terraform.tfstate.d/blue/terraform.tfstate"), states[0])
}

// TestEmptyWorkspaceIsDefault applies a unit in workspace pr-42, then the
// same instance with no Workspace: the second apply goes to the default
// workspace's state, as plain terraform with no workspace selected would,
// and pr-42's state is left as it was.
func TestEmptyWorkspaceIsDefault(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "item", itemComponent)
	u := Unit{Workspace: "pr-42", Workdir: workdirSpec("plat-ue2-dev", "ws", src,
		map[string][]byte{"terraform.tfvars.json": []byte(`{"name":"ws"}`)})}
	r := w.runner(t)
	_, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	home, err := w.wd.Home("plat-ue2-dev", "ws")
	require.NoError(t, err)
	find := func(name string) string {
		var found string
		require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(filepath.ToSlash(p), name) && !strings.Contains(p, ".tfisolate") {
				found = p
			}
			return err
		}))
		return found
	}
	pr := find("terraform.tfstate.d/pr-42/terraform.tfstate")
	require.NotEmpty(t, pr)
	before, err := os.ReadFile(pr)
	require.NoError(t, err)

	u.Workspace = ""
	_, err = r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	def := find("src/terraform.tfstate")
	require.NotEmpty(t, def, "an empty Workspace applies into the default workspace")
	require.Len(t, stateResources(t, def), 1)
	after, err := os.ReadFile(pr)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "pr-42's state is untouched")
}

// TestCommittedLockFileHashesAreChecked commits a lock file whose hashes
// match no package: like terraform init, the run refuses the provider
// (pluginc.ErrChecksum) and applies nothing; with the lock file the cache
// itself writes, the same component applies.
func TestCommittedLockFileHashesAreChecked(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "locked", itemComponent)
	bogus := `provider "` + testprovider.Source + `" {
  version     = "` + providerVersion + `"
  constraints = ">= 1.0.0"
  hashes = [
    "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
  ]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(src, ".terraform.lock.hcl"), []byte(bogus), 0o644))
	state := filepath.Join(w.dir, "locked.tfstate")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "locked", src, files(t, map[string]any{"name": "locked"}, state))}
	rep, err := w.runner(t).Run(testCtx(t), Apply, u)
	require.ErrorIs(t, err, pluginc.ErrChecksum)
	require.Equal(t, Failed, rep.Results[0].Status)
	_, err = os.Stat(state)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing may be applied with an unverified provider")

	pkgs, err := w.cache.Ensure(testCtx(t), pluginc.Requirement{Provider: mustProvider(t, testprovider.Source), Constraints: ">= 1.0.0"})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(src, ".terraform.lock.hcl"), pluginc.LockFile(pkgs), 0o644))
	_, err = w.runner(t).Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.Contains(t, stateResources(t, state), "tfitest_item.this")
}

func mustProvider(t *testing.T, s string) pluginc.Provider {
	t.Helper()
	p, err := pluginc.ParseProvider(s)
	require.NoError(t, err)
	return p
}
