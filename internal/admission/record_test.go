package admission

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/format"
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
	load := func() []peak {
		peaks, err := loadRecord(path, log)
		require.NoError(t, err)
		return peaks
	}
	require.Equal(t, []peak{{Engine: "terraform", Source: "/src/big", Bytes: 1234}}, load())
	require.NoError(t, os.Chmod(path, 0o620))
	require.Empty(t, load(), "a group-writable record is ignored")
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, os.WriteFile(path, []byte(`{"version":0}`), 0o600))
	require.Empty(t, load(), "a record of no version is ignored")
}

// TestMemoryGoldenRecords: the memory records earlier releases wrote
// (internal/format/testdata: 12ea26b's version 1, 9ece32c's version 2)
// are read by this release, a version 1 record's peaks as of unknown
// class.
func TestMemoryGoldenRecords(t *testing.T) {
	for dir, classes := range map[string][]Class{"12ea26b": {classUnknown, classUnknown}, "9ece32c": {ClassApply, ClassPlan, ClassRead}} {
		b, err := os.ReadFile(filepath.Join("..", "format", "testdata", dir, "root", ".memory.json"))
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), ".memory.json")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		peaks, err := loadRecord(path, slog.New(slog.DiscardHandler))
		require.NoError(t, err, dir)
		var got []Class
		for _, p := range peaks {
			require.Equal(t, "terraform", p.Engine)
			require.Positive(t, p.Bytes)
			got = append(got, p.Class)
		}
		require.Equal(t, classes, got, dir)
	}
}

// TestMemoryNewerRecordNeverOverwritten: a record of a newer release
// (its version above this release's, fields this release does not know)
// is refused by name (Newer: a *format.NewerError), steers nothing, and
// is left byte for byte as it was by a Run that measured peaks: the
// record is read as none, never replaced by this release's.
func TestMemoryNewerRecordNeverOverwritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".memory.json")
	newer := []byte(`{"version":3,"peaks":[{"engine":"terraform","source":"/src/big","class":"apply","bytes":{"rss":900}}],"decay":"x"}` + "\n")
	require.NoError(t, os.WriteFile(path, newer, 0o600))
	m := NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: ClassApply, Units: []Unit{{Source: "/src/big"}}})
	require.ErrorIs(t, m.Newer(), format.ErrNewer)
	require.EqualError(t, m.Newer(), path+": written by a newer release: format 3; this release reads up to 2; upgrade this job")
	_, known := m.expected(0, memKey("terraform", "/src/big"))
	require.False(t, known, "a newer record steers nothing")
	key := memKey("terraform", "/src/big")
	m.seen[key], m.seenOK[key] = 56<<20, 56<<20
	m.Save()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(newer), string(got), "the newer record was left as it was")

	// Written by a newer release while this Run ran: still left alone.
	require.NoError(t, os.WriteFile(path, []byte(`{"version":2,"peaks":[]}`), 0o600))
	m = NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: ClassApply, Units: []Unit{{Source: "/src/big"}}})
	require.NoError(t, m.Newer())
	require.NoError(t, os.WriteFile(path, newer, 0o600))
	m.seen[key], m.seenOK[key] = 56<<20, 56<<20
	m.Save()
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(newer), string(got), "a newer record written during the Run was left as it was")
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
