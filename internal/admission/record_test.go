package admission

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The record's high-water mark: raised at once, lowered only by a Run
// whose units succeeded, a quarter of the way at a time.
func TestMemoryMarkDecaysOnlyByMeasurement(t *testing.T) {
	const mib = 1 << 20
	require.Equal(t, int64(600*mib), nextMark(400*mib, 600*mib, 600*mib), "a higher peak replaces the mark")
	require.Equal(t, int64(400*mib), nextMark(400*mib, 100*mib, 0), "failed units never lower it")
	mark := int64(486 * mib)
	for range 3 {
		mark = nextMark(mark, 300*mib, 300*mib)
	}
	require.Greater(t, mark, int64(300*mib+(186*mib)*4/10), "three lighter Runs keep more than 40%% of the gap")
	require.Less(t, mark, int64(300*mib+(186*mib)/2), "and less than half")
	require.Equal(t, int64(350*mib), nextMark(400*mib, 350*mib, 200*mib), "never below the Run's own peak")
}

// A record of peaks another user could have written steers nothing.
func TestMemoryRecordMustBePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	rec := `{"version":1,"peaks":[{"engine":"terraform","source":"/src/big","bytes":1234}]}`
	require.NoError(t, os.WriteFile(path, []byte(rec), 0o600))
	log := slog.New(slog.DiscardHandler)
	require.Equal(t, []peak{{Engine: "terraform", Source: "/src/big", Bytes: 1234}}, loadRecord(path, log))
	require.NoError(t, os.Chmod(path, 0o620))
	require.Empty(t, loadRecord(path, log), "a group-writable record is ignored")
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, os.WriteFile(path, []byte(`{"version":7}`), 0o600))
	require.Empty(t, loadRecord(path, log), "another version's record is ignored")
}

// Admission takes the Run's class, else the heaviest known class (an
// older record's unknown class included), and a unit's hint raises it.
func TestMemoryExpectedByClass(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	// A version 1 record (no classes) and an output Run's peak.
	rec := `{"version":1,"peaks":[{"engine":"terraform","source":"/src/big","bytes":509607936}]}`
	require.NoError(t, os.WriteFile(path, []byte(rec), 0o600))
	gate := func(class Class, units ...Unit) *Memory {
		return NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: class, Units: units})
	}
	key := memKey("terraform", "/src/big")
	u := Unit{}
	m := gate(ClassRead, u)
	got, known := m.expected(0, key)
	require.True(t, known)
	require.Equal(t, int64(486<<20), got, "an old record's peak of unknown class counts for a class with none")
	m.seen[key], m.seenOK[key] = 56<<20, 56<<20
	m.Save()

	m = gate(ClassRead, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(56<<20), got, "output has its own peak now")
	m = gate(ClassApply, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(486<<20), got, "apply has none: the heaviest known, not output's")
	m.seen[key], m.seenOK[key] = 400<<20, 400<<20
	m.Save()
	m = gate(ClassPlan, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(486<<20), got, "plan has none: the heaviest known")
	m = gate(ClassApply, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(400<<20), got, "apply's own")

	hinted := Unit{Expected: 900 << 20}
	m = gate(ClassApply, hinted)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(900<<20), got, "a hint raises")
	m = gate(ClassApply, Unit{Expected: 10 << 20})
	got, _ = m.expected(0, key)
	require.Equal(t, int64(400<<20), got, "a hint never lowers what was measured")
	got, known = m.expected(0, memKey("terraform", "/src/new"))
	require.True(t, known, "a hinted unit of a component never measured needs no measuring run")
	require.Equal(t, int64(10<<20), got)
	got, known = gate(ClassApply, u).expected(0, memKey("terraform", "/src/new"))
	require.False(t, known)
	require.Equal(t, UnmeasuredPeak, got)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var saved record
	require.NoError(t, json.Unmarshal(b, &saved))
	require.Equal(t, recordVersion, saved.Version)
	var classes []Class
	for _, p := range saved.Peaks {
		classes = append(classes, p.Class)
	}
	require.Equal(t, []Class{classUnknown, ClassApply, ClassRead}, classes, "the old peak is kept beside the classes' own")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the record is private")
}

// The record keeps other engines' peaks, and a gate reads only its own
// engine's.
func TestMemoryRecordKeepsOtherEngines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	src := "/src/big"
	m := NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "tofu", Class: ClassPlan, Units: []Unit{{Source: src}}})
	m.seen[memKey("tofu", src)] = 300 << 20
	m.Save()
	m = NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: ClassPlan, Units: []Unit{{Source: src}}})
	_, known := m.expected(0, m.key(0))
	require.False(t, known, "tofu's peak is not terraform's")
	m.seen[memKey("terraform", src)] = 200 << 20
	m.Save()
	m = NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "tofu", Class: ClassPlan, Units: []Unit{{Source: src}}})
	got, known := m.expected(0, m.key(0))
	require.True(t, known)
	require.Equal(t, int64(300<<20), got)
}
