package admission

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// A Class is a kind of command whose runs use memory alike. The record
// keeps each component's peak per class, so a light command (an output)
// never lowers what a heavy one (an apply) taught.
type Class string

// The command classes. A read starts no provider or only loads schemas
// (init, validate, output, and the commands that run no plan); a plan
// configures providers and reads every resource (plan, saved plan,
// destroy plan); an apply also changes them (apply, apply of a saved
// plan, destroy). A custom step is a class of its own (StepClass).
const (
	ClassRead  Class = "read"
	ClassPlan  Class = "plan"
	ClassApply Class = "apply"
)

// classUnknown is the class of a version 1 record's peaks, measured
// before classes existed.
const classUnknown Class = ""

// StepClass is the class of the custom step named name: the gate cannot
// know what a step runs, so each step's peaks are its own.
func StepClass(name string) Class { return Class("step:" + name) }

// record is the record file's content. Version 2 records a class with
// each peak; a version 1 record (written before classes existed) is
// read as peaks of classUnknown, which are kept as they are: nothing
// measures that class, so nothing lowers them, and they count only
// where a class of the component has no peak of its own (see
// Memory.expected).
type record struct {
	Version int    `json:"version"`
	Peaks   []peak `json:"peaks"`
}

// recordVersion is the version Save writes; loadRecord reads it and 1,
// and refuses a newer one by name (internal/format).
const recordVersion = 2

type peak struct {
	Engine string `json:"engine"` // terraform or tofu
	Source string `json:"source"` // the component's source dir
	// Class is the command class the peak was measured in;
	// classUnknown in a version 1 record.
	Class   Class     `json:"class,omitempty"`
	Bytes   int64     `json:"bytes"`
	Updated time.Time `json:"updated"`
}

// nextMark is the peak a class keeps after a Run that measured it: a
// decaying high-water mark, lowered only by measurement and gradually.
// old is the recorded peak, peak the highest peak a unit of the class
// reached in the Run (failed attempts included), okPeak the highest of
// the units that succeeded (0: none did). A peak at or above old
// replaces it at once. Below it, only a Run whose units succeeded
// lowers it, by a quarter of the way down to okPeak (never below
// peak): a unit killed or failed early measured less than it needs, so
// it never lowers the mark, and one light Run forgets at most a quarter
// of what a heavy one taught (the gap to a steady lighter peak is under
// half after three such Runs, a tenth after eight).
func nextMark(old, peak, okPeak int64) int64 {
	if peak >= old {
		return peak
	}
	if okPeak <= 0 {
		return old
	}
	return max(peak, old-(old-okPeak)/4)
}

func memKey(engine, source string) string { return engine + "\x00" + source }

// Save records the peaks measured in this Run in its class, over what
// the record held: each (engine, component, class) peak becomes
// nextMark of the recorded one and this Run's; other classes, engines
// and components, and an older record's peaks of unknown class, are
// kept as they are. A record it cannot write is logged, never an
// error: it only steers scheduling.
func (m *Memory) Save() {
	m.mu.Lock()
	seen, seenOK := maps.Clone(m.seen), maps.Clone(m.seenOK)
	m.mu.Unlock()
	if m.path == "" || len(seen) == 0 || m.newer != nil {
		return
	}
	now := time.Now().UTC()
	peaks, newer := loadRecord(m.path, m.log) // another process may have written since this Run began
	if newer != nil {
		return // a newer release's record is never overwritten
	}
	for i := range peaks {
		k := memKey(peaks[i].Engine, peaks[i].Source)
		if v, ok := seen[k]; ok && peaks[i].Class == m.class {
			peaks[i].Bytes, peaks[i].Updated = nextMark(peaks[i].Bytes, v, seenOK[k]), now
			delete(seen, k)
		}
	}
	for k, v := range seen {
		peaks = append(peaks, peak{Engine: m.engine, Source: k[len(m.engine)+1:], Class: m.class, Bytes: v, Updated: now})
	}
	slices.SortFunc(peaks, func(a, b peak) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Class, b.Class))
	})
	b, err := json.MarshalIndent(record{Version: recordVersion, Peaks: peaks}, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(m.path, append(b, '\n'), 0o600, atomicfile.NoSync())
	}
	if err != nil {
		m.log.Warn("cannot record the units' peak memory", "file", m.path, "err", err)
	}
}

// loadRecord reads the record at path; one someone else wrote (or
// could have) is not believed (DESIGN invariant 12): it only steers
// scheduling, so it is ignored with a warning, never an error. A record
// of a newer release is read as none, and its *format.NewerError
// returned: the caller must not overwrite it (invariant 22).
func loadRecord(path string, log *slog.Logger) ([]peak, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		log.Warn("cannot read the units' peak memory", "file", path, "err", err)
		return nil, nil
	}
	uid, _, owned := pathtrust.Owner(fi)
	euid := pathtrust.Geteuid()
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 || (owned && uid != euid && uid != 0) {
		log.Warn("ignoring the units' peak memory: not a private file of this user", "file", path, "mode", fi.Mode().String())
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Warn("cannot read the units' peak memory", "file", path, "err", err)
		return nil, nil
	}
	if _, err := format.Read(path, b, recordVersion); err != nil {
		if errors.Is(err, format.ErrNewer) {
			log.Warn("the units' peak memory is a newer release's record; going on without it, leaving it as it is", "err", err)
			return nil, err
		}
		log.Warn("ignoring the units' peak memory: not a record", "file", path, "err", err)
		return nil, nil
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil || rec.Version < 1 {
		log.Warn("ignoring the units' peak memory: not a record of this version", "file", path)
		return nil, nil
	}
	if rec.Version == 1 {
		for i := range rec.Peaks {
			rec.Peaks[i].Class = classUnknown
		}
	}
	return slices.DeleteFunc(rec.Peaks, func(p peak) bool { return p.Bytes <= 0 || p.Source == "" }), nil
}
