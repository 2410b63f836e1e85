//go:build unix

package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestApplyPlanInterruptedIsRefused SIGKILLs a host process (a child
// runner) while its ApplyPlan is parked in a provisioner, before any
// state is written, under both engines. The next ApplyPlan of the same
// plan is refused as stale, naming the interrupted apply, and runs no
// terraform apply: the same plan is never applied twice. A new SavePlan
// then applies.
func TestApplyPlanInterruptedIsRefused(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		dir := t.TempDir()
		root, cacheDir := filepath.Join(dir, "workdirs"), filepath.Join(dir, "cache")
		src := filepath.Join(dir, "src", "gated")
		require.NoError(t, os.MkdirAll(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(gatedComponent), 0o644))
		state := filepath.Join(dir, "gated.tfstate")
		spec := func(gate string) workdir.Spec {
			v, err := json.Marshal(map[string]any{"gate": gate})
			require.NoError(t, err)
			b, err := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{"local": map[string]any{"path": state}}}})
			require.NoError(t, err)
			return workdirSpec("plat-ue2-dev", "gated", src, map[string][]byte{"backend.tf.json": b, "terraform.tfvars.json": v})
		}
		wd, err := workdir.New(root)
		require.NoError(t, err)
		cache, err := pluginc.Open(cacheDir)
		require.NoError(t, err)
		rec := &recorder{}
		r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(e.Path), WithEvents(rec.add))
		require.NoError(t, err)

		g := newGate(t, filepath.Join(dir, "gate"))
		u := Unit{Workdir: spec(g.dir)}
		_, err = r.Run(testCtx(t), SavePlan, u)
		require.NoError(t, err)

		started := g.started(t)
		c := startChild(t, childConfig{TF: e.Path, Root: root, Cache: cacheDir, Spec: u.Workdir, Command: ApplyPlan.String()}, nil)
		select {
		case <-started:
		case <-c.Done():
			t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
		}
		// A crashed machine takes every process with it: no interrupt
		// reaches terraform.
		crashMachine(t, c, root)

		// Open the gate for good (plain files instead of fifos), so an
		// apply of the plan that ran again would finish, not park.
		for _, n := range []string{"started", "release"} {
			p := filepath.Join(g.dir, n)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.WriteFile(p, nil, 0o644))
		}
		rec.mu.Lock()
		rec.events = nil
		rec.mu.Unlock()
		rep, err := r.Run(testCtx(t), ApplyPlan, u)
		require.ErrorIs(t, err, ErrStalePlan)
		require.ErrorContains(t, err, "never finished")
		require.Equal(t, -1, rec.index(rep.Results[0].Unit, PhaseApply), "no terraform apply ran")

		// Planned again (with the gate open), the instance applies.
		u = Unit{Workdir: spec("")}
		_, err = r.Run(testCtx(t), SavePlan, u)
		require.NoError(t, err)
		_, err = r.Run(testCtx(t), ApplyPlan, u)
		require.NoError(t, err)
		require.Contains(t, stateResources(t, state), "terraform_data.slow")
	})
}
