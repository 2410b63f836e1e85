package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/bundle"
	"github.com/tfisolate/tfisolate/internal/reflink"
	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// machine is one CI machine of a bundle test: its own checkout of the
// component, workdir root and plugin cache.
type machine struct {
	src    string
	runner *Runner
	wd     *workdir.Manager
}

func newMachine(t *testing.T, w *engineWorld, name, fixtureDir string) *machine {
	t.Helper()
	dir := filepath.Join(w.dir, name)
	m := &machine{src: filepath.Join(dir, "checkout", "item")}
	require.NoError(t, reflink.CopyTree(m.src, fixtureDir))
	cache, err := pluginc.Open(filepath.Join(dir, "cache"),
		pluginc.WithSource(pluginc.NetworkMirror(w.reg.MirrorURL())), pluginc.WithHTTPClient(w.reg.HTTPClient()))
	require.NoError(t, err)
	m.wd, err = workdir.New(filepath.Join(dir, "workdirs"))
	require.NoError(t, err)
	m.runner, err = New(WithWorkdirs(m.wd), WithPluginCache(cache), WithTerraform(w.e.Path), WithParallelism(6))
	require.NoError(t, err)
	return m
}

// units are the twelve instances, each with its state on srv.
func (m *machine) units(t *testing.T, srv *testbackend.HTTPState) []Unit {
	t.Helper()
	var out []Unit
	for i := range 12 {
		inst := fmt.Sprintf("item-%02d", i)
		v, err := json.Marshal(map[string]any{"name": inst})
		require.NoError(t, err)
		out = append(out, Unit{Workdir: workdirSpec("plat-ue2-dev", inst, m.src, map[string][]byte{
			"backend.tf.json": srv.BackendJSON(inst), "terraform.tfvars.json": v})})
	}
	return out
}

// TestPlanBundleAcrossMachines: machine A plans twelve instances against
// one real backend and exports the plans as bundles (with a key); the
// bundles move by file copy; machine B (its own checkout, workdir root
// and plugin cache) imports and applies exactly those plans, 12/12, each
// state then holding what was planned. Refused, each by name and with
// nothing applied or written: a bundle whose component changed on the
// importing machine (ErrStalePlan naming the change), an altered bundle
// (ErrPlanBundle), one checked with another key or without its MAC, and
// the same plans applied again on a third machine (ErrStalePlan).
func TestPlanBundleAcrossMachines(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		srv := testbackend.StartHTTPState(t)
		fix := fixture(t, "item")
		key := []byte("fleet-bundle-key")
		artifacts := filepath.Join(w.dir, "artifacts")

		a := newMachine(t, w, "a", fix)
		ua := a.units(t, srv)
		rep, err := a.runner.Run(testCtx(t), SavePlan, ua...)
		require.NoError(t, err)
		rep, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, key), ua...)
		require.NoError(t, err)
		var size int64
		var ids []string
		for _, res := range rep.Results {
			ids = append(ids, res.Unit)
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			fi, err := os.Stat(BundlePath(artifacts, res.Unit))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a bundle holds what the plan holds")
			size += fi.Size()
		}
		t.Logf("12 plan bundles: %d bytes", size)

		// An altered bundle and a changed checkout are refused.
		tampered := filepath.Join(w.dir, "tampered")
		require.NoError(t, reflink.CopyTree(tampered, artifacts))
		alterMember(t, BundlePath(tampered, ids[0]), bundle.PlanJSONMember)

		b := newMachine(t, w, "b", fix)
		ub := b.units(t, srv)
		rep, err = b.runner.Run(testCtx(t), ImportPlan(tampered, key), ub[0])
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorContains(t, err, "plan.json does not match")
		rep, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, []byte("another key")), ub[0])
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorContains(t, err, "MAC does not match")
		_, err = b.runner.Run(testCtx(t), ApplyPlan, ub[0])
		require.ErrorIs(t, err, ErrNoPlan, "a refused bundle left no plan behind")

		changed := newMachine(t, w, "changed", fix)
		writeTree(t, changed.src, map[string]string{"extra.tf": `output "extra" { value = 1 }`})
		rep, err = changed.runner.Run(testCtx(t), ImportPlan(artifacts, key), changed.units(t, srv)...)
		require.ErrorIs(t, err, ErrStalePlan)
		require.ErrorContains(t, err, `does not match this workdir: the component's files (added "extra.tf") changed since it was saved`)
		for _, res := range rep.Results {
			require.ErrorIs(t, res.Err, ErrStalePlan, "%s", res.Unit)
		}

		// B applies exactly A's plans.
		rep, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, key), ub...)
		require.NoError(t, err)
		for _, res := range rep.Results {
			require.NotNil(t, res.Plan, "%s", res.Unit)
			require.Equal(t, 2, res.Plan.Add, "%s: the imported plan creates the item and its meta", res.Unit)
		}
		rep, err = b.runner.Run(testCtx(t), ApplyPlan, ub...)
		require.NoError(t, err)
		serials := map[string]int{}
		for i, res := range rep.Results {
			require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
			require.Equal(t, 2, res.Summary.Add, "%s", res.Unit)
			st, ok := srv.State(fmt.Sprintf("item-%02d", i))
			require.True(t, ok)
			var doc struct {
				Serial    int
				Resources []struct{ Type string }
			}
			require.NoError(t, json.Unmarshal(st, &doc))
			require.Len(t, doc.Resources, 2, "%s", res.Unit)
			serials[res.Unit] = doc.Serial
		}

		// The same bundles on a third machine: spent.
		c := newMachine(t, w, "c", fix)
		uc := c.units(t, srv)
		_, err = c.runner.Run(testCtx(t), ImportPlan(artifacts, key), uc...)
		require.NoError(t, err, "the bundles are intact and match C's checkout")
		rep, err = c.runner.Run(testCtx(t), ApplyPlan, uc...)
		require.ErrorIs(t, err, ErrStalePlan)
		for i, res := range rep.Results {
			require.ErrorIs(t, res.Err, ErrStalePlan, "%s", res.Unit)
			st, ok := srv.State(fmt.Sprintf("item-%02d", i))
			require.True(t, ok)
			var doc struct{ Serial int }
			require.NoError(t, json.Unmarshal(st, &doc))
			require.Equal(t, serials[res.Unit], doc.Serial, "%s: nothing applied twice", res.Unit)
		}

		// Without a key on either side, the digest alone still catches
		// damage; with a key on import only, a bundle without a MAC is
		// refused.
		plain := filepath.Join(w.dir, "plain")
		_, err = a.runner.Run(testCtx(t), SavePlan, ua[1])
		require.NoError(t, err)
		_, err = a.runner.Run(testCtx(t), ExportPlan(plain, nil), ua[1])
		require.NoError(t, err)
		_, err = c.runner.Run(testCtx(t), ImportPlan(plain, key), uc[1])
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorContains(t, err, "carries no MAC")
	})
}

// alterMember rewrites one member of the bundle at p with one byte
// changed, keeping its manifest.
func alterMember(t *testing.T, p, name string) {
	t.Helper()
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	tr := tar.NewReader(bytes.NewReader(raw))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if h.Name == name {
			data[len(data)/2] ^= 1
			found = true
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.True(t, found, "%s has a member %s", p, name)
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
}
