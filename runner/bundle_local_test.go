package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/bundle"
	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// TestPlanBundleLocalStateRefused, under both engines, side by side: of
// four instances planned on machine A, the three whose state is local to
// A (no backend block; a "local" backend at an absolute path;
// -backend-config given without a backend block, which terraform
// ignores) are refused at ExportPlan with ErrLocalState naming the unit
// and why, and no bundle is written; the one on an http backend exports,
// and machine B imports and applies it, its state then holding what was
// planned. On import, refused by name with nothing written: a bundle of
// a local-state unit made by hand and labelled with a remote backend
// (B's own configuration says local), and a bundle that records no
// backend (an older export's).
func TestPlanBundleLocalStateRefused(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		srv := testbackend.StartHTTPState(t)
		fix := fixture(t, "item")
		artifacts := filepath.Join(w.dir, "artifacts")
		localBackend, err := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{
			"local": map[string]any{"path": filepath.Join(w.dir, "shared", "declared.tfstate")}}}})
		require.NoError(t, err)
		units := func(m *machine) map[string]Unit {
			unit := func(inst string, backend []byte, backendConfig ...string) Unit {
				files := map[string][]byte{"terraform.tfvars.json": []byte(`{"name": "` + inst + `"}`)}
				if backend != nil {
					files["backend.tf.json"] = backend
				}
				return Unit{Workdir: workdirSpec("plat-ue2-dev", inst, m.src, files), Args: Args{BackendConfig: backendConfig}}
			}
			return map[string]Unit{
				"no backend block":           unit("nobackend", nil),
				`backend "local"`:            unit("declared", localBackend),
				"-backend-config, no block":  unit("configonly", nil, "address="+srv.Address("configonly")),
				"http backend (state moves)": unit("remote", srv.BackendJSON("remote")),
			}
		}
		a, b := newMachine(t, w, "a", fix), newMachine(t, w, "b", fix)
		ua, ub := units(a), units(b)
		all := func(us map[string]Unit) []Unit {
			var out []Unit
			for _, u := range us {
				out = append(out, u)
			}
			return out
		}
		rep, err := a.runner.Run(testCtx(t), SavePlan, all(ua)...)
		require.NoError(t, err)
		plans := map[string]*PlanSummary{}
		for _, res := range rep.Results {
			plans[res.Unit] = res.Plan
		}

		rep, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, nil), all(ua)...)
		require.ErrorIs(t, err, ErrLocalState)
		for name, u := range ua {
			id := u.Workdir.Stack + "/" + u.Workdir.Instance
			res := bundleResult(t, rep, id)
			if name == "http backend (state moves)" {
				require.Equal(t, Succeeded, res.Status, "%s: %v", name, res.Err)
				require.FileExists(t, BundlePath(artifacts, id))
				continue
			}
			require.ErrorIs(t, res.Err, ErrLocalState, name)
			require.ErrorContains(t, res.Err, id, "%s: the error names the unit", name)
			require.ErrorContains(t, res.Err, "another machine", name)
			require.NoFileExists(t, BundlePath(artifacts, id), name)
		}
		require.ErrorContains(t, bundleResult(t, rep, "plat-ue2-dev/nobackend").Err, "no backend block")
		require.ErrorContains(t, bundleResult(t, rep, "plat-ue2-dev/declared").Err, `backend "local"`)
		require.ErrorContains(t, bundleResult(t, rep, "plat-ue2-dev/configonly").Err, "-backend-config")

		// The remote unit's plan goes to B and is applied there.
		remote := ub["http backend (state moves)"]
		_, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, nil), remote)
		require.NoError(t, err)
		rep, err = b.runner.Run(testCtx(t), ApplyPlan, remote)
		require.NoError(t, err)
		require.Equal(t, 2, rep.Results[0].Summary.Add)
		st, ok := srv.State("remote")
		require.True(t, ok)
		var doc struct{ Resources []struct{ Type string } }
		require.NoError(t, json.Unmarshal(st, &doc))
		require.Len(t, doc.Resources, 2, "the state B applied to is the one every machine reaches")

		// A bundle of the local unit, made by hand and labelled "http":
		// B's own configuration keeps the state on B, so it is refused.
		forged := filepath.Join(w.dir, "forged")
		nb := ub["no backend block"]
		forgeBundle(t, a, plans["plat-ue2-dev/nobackend"], "plat-ue2-dev/nobackend", BundlePath(forged, "plat-ue2-dev/nobackend"), "http")
		_, err = b.runner.Run(testCtx(t), ImportPlan(forged, nil), nb)
		require.ErrorIs(t, err, ErrLocalState)
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorContains(t, err, "plat-ue2-dev/nobackend")
		_, err = b.runner.Run(testCtx(t), ApplyPlan, nb)
		require.ErrorIs(t, err, ErrNoPlan, "a refused bundle left no plan behind")

		// A bundle that says nothing of its backend (an older export, or
		// one whose record was removed) is refused.
		_, err = a.runner.Run(testCtx(t), SavePlan, ua["http backend (state moves)"])
		require.NoError(t, err)
		_, err = a.runner.Run(testCtx(t), ExportPlan(artifacts, nil), ua["http backend (state moves)"])
		require.NoError(t, err)
		rewriteManifest(t, BundlePath(artifacts, "plat-ue2-dev/remote"), func(m *bundle.Manifest[planMeta]) { m.Backend = "" })
		_, err = b.runner.Run(testCtx(t), ImportPlan(artifacts, nil), remote)
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorContains(t, err, "records no backend")
		_, err = b.runner.Run(testCtx(t), ApplyPlan, remote)
		require.ErrorIs(t, err, ErrNoPlan, "a refused bundle left no plan behind")
	})
}

// bundleResult is the Result of the unit with the given ID in rep.
func bundleResult(t *testing.T, rep *Report, id string) *Result {
	t.Helper()
	require.NotNil(t, rep)
	for i := range rep.Results {
		if rep.Results[i].Unit == id {
			return &rep.Results[i]
		}
	}
	require.Failf(t, "no result", "unit %s", id)
	return nil
}

// forgeBundle writes at dst, without ExportPlan, a bundle of the plan
// that SavePlan saved on m for unit id (p is its Plan), its manifest
// saying its state is in a backend of type backend, with a valid digest
// and no MAC: what someone with the artifact store could write.
func forgeBundle(t *testing.T, m *machine, p *PlanSummary, id, dst, backend string) {
	t.Helper()
	require.NotNil(t, p)
	var meta planMeta
	require.NoError(t, json.Unmarshal(readFileBytes(t, filepath.Join(filepath.Dir(p.File), planMetaName)), &meta))
	members := map[string][]byte{bundle.PlanMember: readFileBytes(t, p.File), bundle.PlanJSONMember: readFileBytes(t, p.JSONFile)}
	home, err := m.wd.Home("plat-ue2-dev", filepath.Base(id))
	require.NoError(t, err)
	require.NoError(t, filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == lockFileName {
			if sum, err := treesum.HashFile(path); err == nil && sum == meta.LockFile {
				members[bundle.LockMember] = readFileBytes(t, path)
			}
		}
		return err
	}))
	_, err = bundle.Write(dst, &bundle.Manifest[planMeta]{Unit: id, Record: meta, Backend: backend}, members, nil)
	require.NoError(t, err)
}

// rewriteManifest changes the manifest of the bundle at p with edit and
// seals it again with a valid digest and no MAC, as someone without the
// key could.
func rewriteManifest(t *testing.T, p string, edit func(*bundle.Manifest[planMeta])) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(readFileBytes(t, p)))
	members := map[string][]byte{}
	var man bundle.Manifest[planMeta]
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if h.Name == bundle.ManifestMember {
			require.NoError(t, json.Unmarshal(data, &man))
			continue
		}
		members[h.Name] = data
	}
	edit(&man)
	_, err := bundle.Write(p, &man, members, nil)
	require.NoError(t, err)
}
