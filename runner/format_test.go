package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/bundle"
	"github.com/tfisolate/tfisolate/workdir"
)

// golden is internal/format's testdata: what earlier releases wrote.
const golden = "../internal/format/testdata"

// TestGoldenUnitRecords: the init, applied and saved plan records that
// earlier releases wrote (ad85e94, 12ea26b, 9ece32c) are read by this
// release: an init record is compared (by its fingerprint when it names
// no inputs), an applied record matches the inputs it names, a saved
// plan's record is read (and judged stale or not by its digests); their
// plan bundles are refused by name as an older release's
// (ErrPlanBundle), never as damaged.
func TestGoldenUnitRecords(t *testing.T) {
	for _, c := range []string{"ad85e94", "12ea26b", "9ece32c"} {
		t.Run(c, func(t *testing.T) {
			homes, err := filepath.Glob(filepath.Join(golden, c, "root", "golden__app-*"))
			require.NoError(t, err)
			require.Len(t, homes, 1)
			x := &unitRun{w: &workdir.Workdir{DataDir: filepath.Join(homes[0], ".tfisolate", "data")}}

			var rec initRecord
			found, err := readRecord(filepath.Join(x.w.DataDir, initRecordName), initRecordVersion, &rec)
			require.NoError(t, err)
			require.True(t, found)
			require.Len(t, rec.Fingerprint, 64)
			require.Contains(t, initChanged(rec.Parts, map[string]string{"engine version": "x"}), "changed")

			b, err := os.ReadFile(filepath.Join(x.w.DataDir, appliedName))
			require.NoError(t, err)
			var applied appliedRecord
			require.NoError(t, json.Unmarshal(b, &applied))
			same, err := x.unchanged(applied.Inputs)
			require.NoError(t, err)
			require.True(t, same, "an older applied record matches its inputs")

			saved, err := x.savedPlanMeta()
			require.NoError(t, err)
			require.Len(t, saved.Plan, 64)
			require.Contains(t, staleness(saved, planMeta{Plan: saved.Plan, Digest: "other"}, false), "changed")

			bundles, _ := filepath.Glob(filepath.Join(golden, c, "bundle*", "*"+bundleExt))
			for _, p := range bundles {
				key := []byte(nil)
				if strings.Contains(p, "keyed") {
					key = []byte("golden-key")
				}
				_, _, err := readBundle(p, "golden/app", key)
				require.ErrorIs(t, err, ErrPlanBundle)
				require.NotErrorIs(t, err, ErrNewerFormat)
				require.ErrorContains(t, err, "written by an older release: format 1")
				require.NotContains(t, err.Error(), "damaged")
			}
		})
	}
}

const bundleExt = ".tfplan-bundle"

// TestPlanMetaFieldsPinned: the saved plan's record is what a bundle's
// digest covers. A field added, removed or renamed changes what an
// older or newer release verifies: bump planMetaVersion and
// bundle.Version with it, then update this list.
func TestPlanMetaFieldsPinned(t *testing.T) {
	b, err := json.Marshal(planMeta{Version: 1, Parts: map[string]string{"a": "b"}})
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	require.Equal(t, []string{"args", "created", "destroy", "digest", "engine", "inputs", "lock_file", "parts", "plan", "version"},
		slices.Sorted(maps.Keys(fields)), "the plan record changed: bump planMetaVersion and bundle.Version (now %d)", bundle.Version)
	require.Equal(t, 2, bundle.Version)
	require.Equal(t, 2, planMetaVersion)
}

// newerRecord rewrites the JSON record at p as a newer release (format
// 9) would write it, with a field this release does not know, and
// returns its bytes.
func newerRecord(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b, &rec), p)
	rec["version"], rec["written_by"] = 9, "a newer release"
	out, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, out, 0o644))
	return out
}

// TestNewerRecordsRefusedByName: each record a unit keeps in its data
// dir, written by a newer release (format 9, a field this release does
// not know), makes the command that reads it fail the unit by name
// (ErrNewerFormat, naming the record: "written by a newer release:
// format 9; this release reads up to 2; upgrade this job"), never as
// damaged, and the record is left byte for byte as it was: the init
// record (Apply), the applied record (Apply with WithSkipUnchanged), the
// journal (Apply), the saved plan's record (ApplyPlan, ExportPlan) and
// the mark of an apply under way (ApplyPlan); a newer release's plan
// bundle is refused by ImportPlan (ErrPlanBundle too) before the saved
// plan is touched, even one whose manifest does not decode as this
// release's. A newer memory record in
// the workdir root is no error: the Run succeeds without it, says so
// once in Report.Warnings, and leaves it as it was.
func TestNewerRecordsRefusedByName(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `resource "terraform_data" "a" { input = "x" }`)
	u := Unit{Workdir: workdirSpec("s", "newer", src, nil)}
	r := w.runner(t)
	ctx := testCtx(t)
	_, err := r.RunWith(ctx, Apply, []Unit{u}, WithSkipUnchanged())
	require.NoError(t, err)
	_, err = r.Run(ctx, SavePlan, u)
	require.NoError(t, err)
	homes, err := filepath.Glob(filepath.Join(w.wd.Root(), "s__newer-*"))
	require.NoError(t, err)
	require.Len(t, homes, 1)
	data := filepath.Join(homes[0], ".tfisolate", "data")

	for _, tc := range []struct {
		file string
		cmd  Command
		opts []RunOption
	}{
		{filepath.Join(planDirName, planMetaName), ApplyPlan, nil},
		{filepath.Join(planDirName, planMetaName), ExportPlan(t.TempDir(), nil), nil},
		{filepath.Join(planDirName, planApplyingName), ApplyPlan, nil},
		{initRecordName, Apply, nil},
		{appliedName, Apply, []RunOption{WithSkipUnchanged()}},
		{"tfisolate-journal.json", Apply, nil},
	} {
		t.Run(tc.cmd.String()+" "+filepath.Base(tc.file), func(t *testing.T) {
			p := filepath.Join(data, tc.file)
			if tc.file == filepath.Join(planDirName, planApplyingName) {
				require.NoError(t, os.WriteFile(p, []byte(`{"plan":"x","pid":1,"host":"h"}`), 0o644))
				defer os.Remove(p)
			}
			orig, err := os.ReadFile(p)
			require.NoError(t, err)
			defer func() { require.NoError(t, os.WriteFile(p, orig, 0o644)) }()
			was := newerRecord(t, p)
			rep, err := r.RunWith(ctx, tc.cmd, []Unit{u}, tc.opts...)
			require.ErrorIs(t, err, ErrNewerFormat)
			require.Equal(t, Failed, rep.Results[0].Status)
			require.ErrorIs(t, rep.Results[0].Err, ErrNewerFormat)
			require.ErrorContains(t, err, p+": written by a newer release: format 9; this release reads up to 2; upgrade this job")
			require.NotContains(t, err.Error(), "damaged")
			got, rerr := os.ReadFile(p)
			require.NoError(t, rerr)
			require.Equal(t, string(was), string(got), "the newer record was left as it was")
		})
	}

	t.Run("import-plan of a newer bundle", func(t *testing.T) {
		dir := t.TempDir()
		p := BundlePath(dir, u.id())
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		manifest := []byte(`{"format":"tfisolate-plan-bundle/3","unit":"s/newer","meta":{"plan":{"sha512":"x"}}}`)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: bundle.ManifestMember, Mode: 0o600, Size: int64(len(manifest))}))
		_, err := tw.Write(manifest)
		require.NoError(t, err)
		require.NoError(t, tw.Close())
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
		meta := filepath.Join(data, planDirName, planMetaName)
		before, err := os.ReadFile(meta)
		require.NoError(t, err)
		_, err = r.Run(ctx, ImportPlan(dir, nil), u)
		require.ErrorIs(t, err, ErrPlanBundle)
		require.ErrorIs(t, err, ErrNewerFormat)
		require.ErrorContains(t, err, p+": written by a newer release: format 3; this release reads up to 2; upgrade this job")
		after, err := os.ReadFile(meta)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after), "the saved plan was left as it was")
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, buf.Bytes(), got)
	})

	t.Run("memory", func(t *testing.T) {
		p := filepath.Join(w.wd.Root(), memoryFile)
		newer := []byte(`{"version":3,"peaks":[{"engine":"terraform","source":"` + src + `","bytes":{"rss":1}}]}`)
		require.NoError(t, os.WriteFile(p, newer, 0o600))
		rep, err := r.Run(ctx, Apply, u, Unit{Workdir: workdirSpec("s", "newer-2", src, nil)})
		require.NoError(t, err)
		require.Equal(t, 2, rep.Count(Succeeded))
		var said []string
		for _, m := range rep.Warnings {
			if strings.Contains(m, memoryFile) {
				said = append(said, m)
			}
		}
		require.Equal(t, []string{"memory record not used, and left as it is: " + p +
			": written by a newer release: format 3; this release reads up to 2; upgrade this job"}, said)
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(newer), string(got), "the newer memory record was left as it was")
	})
}
