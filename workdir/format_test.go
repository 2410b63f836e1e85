package workdir

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// golden is internal/format's testdata: what earlier releases wrote.
const golden = "../internal/format/testdata"

// TestGoldenWorkdirRecords: the stamps, state records and register of
// adoptions earlier releases wrote (ad85e94, 12ea26b, 9ece32c) are read
// by this release: every stamp is of a version it reads (none is taken
// for a newer release's, whatever it lacks: a stamp from before a field
// existed is rebuilt once, as before), the state records keep their
// adoptions, and 9ece32c's register its claim.
func TestGoldenWorkdirRecords(t *testing.T) {
	stamps, err := filepath.Glob(golden + "/*/root/*/" + metaDir + "/" + stampFile)
	require.NoError(t, err)
	require.Len(t, stamps, 5)
	for _, p := range stamps {
		home := filepath.Dir(filepath.Dir(p))
		require.NoError(t, stampNewer(home), p)
		st := readStamp(home)
		require.NotNil(t, st, p)
		require.Equal(t, 1, st.Version)
		require.True(t, st.Complete, p)
		require.NotEmpty(t, st.Hash, p)
	}
	for _, c := range []string{"12ea26b", "9ece32c"} {
		home, err := filepath.Glob(golden + "/" + c + "/root/golden__legacy-*")
		require.NoError(t, err)
		require.Len(t, home, 1)
		rec := readStateRecord(home[0])
		require.Len(t, rec.Adopted, 1, c)
		require.Equal(t, "00000000-0000-0000-0000-00000000901d", rec.Adopted[0].Lineage)
		require.Equal(t, 1, rec.Adopted[0].Resources)
	}
	b, err := os.ReadFile(golden + "/9ece32c/root/" + adoptedFile)
	require.NoError(t, err)
	m := newManager(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.Root(), adoptedFile), b, 0o600))
	reg, exists, err := m.readAdopted()
	require.NoError(t, err)
	require.True(t, exists)
	require.Len(t, reg.Claims, 1)
	require.Equal(t, "golden", reg.Claims[0].Stack)
	require.Equal(t, "legacy", reg.Claims[0].Instance)
}

// newer rewrites the JSON record at p as a newer release (format 9)
// would write it, with a field this release does not know, and returns
// its bytes.
func newer(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b, &rec), p)
	rec["version"], rec["written_by"] = 9, "a newer release"
	out, err := json.MarshalIndent(rec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, out, 0o600))
	return out
}

// requireNewer checks that err refuses p by name as a newer release's,
// and that p is byte for byte what that release wrote.
func requireNewer(t *testing.T, err error, p string, was []byte) {
	t.Helper()
	require.ErrorIs(t, err, ErrNewerFormat)
	require.ErrorContains(t, err, p+": written by a newer release: format 9; this release reads up to ")
	require.ErrorContains(t, err, "; upgrade this job")
	require.NotContains(t, err.Error(), "damaged")
	got, rerr := os.ReadFile(p)
	require.NoError(t, rerr)
	require.Equal(t, string(was), string(got), "the newer record was left as it was")
}

// TestNewerStampRefusedByName: an instance whose stamp a newer release
// wrote is neither refreshed nor rebuilt (which would overwrite the
// stamp with this release's) by Prepare, nor removed by Remove: each is
// refused by name, and the stamp is left as it was.
func TestNewerStampRefusedByName(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`})
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	require.NoError(t, w.Close())
	p := stampPath(w.Home)
	was := newer(t, p)
	before := snapshot(t, w.Home)
	_, err := m.Prepare(context.Background(), s)
	requireNewer(t, err, p, was)
	// A changed source (a rebuild, were the stamp this release's).
	testenv.WriteTree(t, src, map[string]string{"extra.tf": `output "x" { value = 1 }`})
	_, err = m.Prepare(context.Background(), s)
	requireNewer(t, err, p, was)
	require.Equal(t, before, snapshot(t, w.Home), "nothing in the instance changed")
	err = m.Remove(context.Background(), "s", "i", false)
	requireNewer(t, err, p, was)
}

// TestNewerAdoptionRecordsRefusedByName: the root's register of
// adoptions, written by a newer release, is refused by name on an
// adoption, which copies nothing; the register is left as it was. An
// instance's state record of a newer release is never written over.
func TestNewerAdoptionRecordsRefusedByName(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "legacy", Instance: "main", Source: src, AdoptState: true})
	require.NoError(t, w.Close())
	p := filepath.Join(m.Root(), adoptedFile)
	was := newer(t, p)
	_, err := m.Prepare(context.Background(), Spec{Stack: "legacy", Instance: "two", Source: src, AdoptState: true})
	requireNewer(t, err, p, was)
	requireNoState(t, m, "legacy", "two")

	rp := stateRecordPath(w.Home)
	wasRec := newer(t, rp)
	requireNewer(t, writeStateRecord(w.Home, stateRecord{}), rp, wasRec)
}
