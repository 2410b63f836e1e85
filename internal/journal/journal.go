package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/inplace"
)

// name is the journal's file in an instance's data dir.
const name = "tfisolate-journal.json"

// keep bounds how many unfinished runs are remembered, and maxAge for
// how long: a lock older than that is not this SDK's to prove.
const (
	keep   = 8
	maxAge = 7 * 24 * time.Hour
)

// Run is one run of an instance as the journal records it.
type Run struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Who     string    `json:"who"` // user@host, as terraform writes a lock's Who
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	// Until is when a later run found this one unfinished: the run ended
	// (crashed) before then.
	Until time.Time `json:"until,omitzero"`
	// Engine is the last terraform process the run started, recorded as
	// it started: a run that crashed may have left it running.
	Engine *Engine `json:"engine,omitempty"`
}

// OnThisHost reports whether r ran on this host, where its engine's PID
// names a process that can be looked for.
func (r *Run) OnThisHost() bool {
	_, host := Who()
	return r.Host == host
}

// Engine names one terraform (or shim) process: its PID, which is also
// its process group (it is started as a group leader), and its start
// time, so that a process that reused the PID is never taken for it.
type Engine struct {
	PID int `json:"pid"`
	// Start is in clock ticks since boot (/proc/PID/stat); 0 where
	// unknown (outside Linux), and then the process is never looked for.
	Start uint64 `json:"start,omitempty"`
	// Output is its stdout file (stderr is beside it, .err).
	Output string `json:"output,omitempty"`
	// Began is when the runner started it (wall clock): a state lock of
	// this engine was taken soon after (see LeftBy).
	Began time.Time `json:"began,omitzero"`
	// Alive is the latest moment a runner saw it running, when one did:
	// its own host, which had to kill it (the last write to its output,
	// read before the host removed the files), or a later run that
	// waited for it (the start of the last scan that found it). A
	// later run of an engine whose host died reads its output files'
	// times itself (see lastAlive).
	Alive time.Time `json:"alive,omitzero"`
}

// files are the engine's output files, stdout then stderr; none when it
// recorded no output.
func (e *Engine) files() []string {
	if e.Output == "" {
		return nil
	}
	return []string{e.Output, strings.TrimSuffix(e.Output, ".out") + ".err"}
}

// lastAlive is the engine's last sign of life that the runner can prove:
// the latest of Alive and the last write to its output files, which only
// the engine writes (the kernel dates a write from a clock that never
// runs ahead of the wall clock, so the engine ran then). Zero when there
// is none. It is never "now": a run found crashed may have died long
// before the next run of its instance looked.
func (e *Engine) lastAlive() time.Time {
	t := e.Alive
	for _, p := range e.files() {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// journal is the file's content.
type journal struct {
	// Version is the journal's format (internal/format): version, as
	// written; 1 (none named) in earlier releases'.
	Version int   `json:"version,omitempty"`
	Current *Run  `json:"current,omitempty"`
	Crashed []Run `json:"crashed,omitempty"`
}

// Begin reads the journal in dataDir, moves a run it finds under way
// into the crashed list, and records this run (of command, started at
// now) as current. It returns the crashed runs.
//
// The write is not synced, like RecordEngine's, and made in place (see
// write): what a later run does with a crashed run (wait for its engine,
// take back a state lock it left, see LeftBy) needs the engine record,
// which a machine that goes down may lose anyway, and a host process
// that dies leaves both in the page cache. Two fsyncs a unit bought
// nothing.
func Begin(dataDir, command string, now time.Time) ([]Run, error) {
	p := filepath.Join(dataDir, name)
	var j journal
	if b, err := os.ReadFile(p); err == nil {
		// A newer release's journal may prove what this one cannot read:
		// refused by name, never rewritten as this release's.
		if _, err := format.Read(p, b, version); errors.Is(err, format.ErrNewer) {
			return nil, err
		}
		_ = json.Unmarshal(b, &j) // an unreadable journal proves nothing
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if j.Current != nil {
		c := *j.Current
		c.Until = now
		j.Crashed = append(j.Crashed, c)
	}
	kept := j.Crashed[:0]
	for _, c := range j.Crashed {
		if now.Sub(c.Started) < maxAge {
			kept = append(kept, c)
		}
	}
	if len(kept) > keep {
		kept = kept[len(kept)-keep:]
	}
	who, host := Who()
	j = journal{Current: &Run{PID: os.Getpid(), Host: host, Who: who, Command: command, Started: now}, Crashed: kept}
	if err := atomicfile.MkdirPrivate(dataDir); err != nil {
		return nil, err
	}
	if err := write(p, j, false); err != nil {
		return nil, err
	}
	return kept, nil
}

// End records that this run ended; crashed is what Begin returned, with
// what the run learned about those runs since. A run whose terraform had
// to be killed may have left state locks, so it stays in the crashed
// list, written atomically and synced, with alive, the killed
// terraform's last sign of life (tfcmd's KilledSign: its output files
// are gone by now). Otherwise the journal is left with no run under
// way, in place, for the next run to rewrite rather than create.
func End(dataDir string, crashed []Run, killed bool, alive, now time.Time) error {
	p := filepath.Join(dataDir, name)
	j, err := read(p)
	if err != nil {
		return err
	}
	if killed && j.Current != nil {
		c := *j.Current
		c.Until = now
		// A sign from before this engine began is another, earlier
		// process's.
		if c.Engine != nil && alive.After(c.Engine.Alive) && !alive.Before(c.Engine.Began) {
			e := *c.Engine
			e.Alive = alive
			c.Engine = &e
		}
		crashed = append(crashed, c)
	}
	j = journal{Crashed: crashed}
	if len(j.Crashed) == 0 {
		return write(p, j, false)
	}
	return write(p, j, true)
}

// RecordEngine records, as the current run's engine, a terraform process
// that has just started. The write is in place and not synced (see
// write): it only has to survive the host's process, not the machine (a
// machine that goes down takes the engine with it).
func RecordEngine(dataDir string, e Engine) error {
	p := filepath.Join(dataDir, name)
	j, err := read(p)
	if err != nil {
		return err
	}
	if j.Current == nil {
		return nil
	}
	j.Current.Engine = &e
	return write(p, j, false)
}

// SweepOutputs removes the engine output files in dir (the instance's
// engine output dir) that no run in crashed names: with the instance
// lock held, no running host will read them.
func SweepOutputs(dir string, crashed []Run) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var kept []string
	for _, c := range crashed {
		if e := c.Engine; e != nil {
			kept = append(kept, e.files()...)
		}
	}
	for _, e := range ents {
		if p := filepath.Join(dir, e.Name()); !slices.Contains(kept, p) {
			_ = os.Remove(p)
		}
	}
}

// read parses the journal at p; a journal that does not parse is an
// error here, unlike in Begin, since this run wrote it.
func read(p string) (journal, error) {
	var j journal
	b, err := os.ReadFile(p)
	if err != nil {
		return j, err
	}
	if _, err := format.Read(p, b, version); err != nil {
		return j, err
	}
	err = json.Unmarshal(b, &j)
	return j, err
}

// version is the journal format this release writes and the newest it
// reads: 2, the first to name its version (1: every earlier release's,
// the same fields).
const version = 2

// minSize is the size a journal is created with, so that records of any
// usual length are rewritten in place without growing it.
const minSize = 1024

// write writes j to the journal at p. A durable write replaces the
// journal atomically and synced. Any other is made in place and not
// synced (internal/inplace: one write at offset 0, within a page, so a
// host killed mid-write leaves the old record or the new one): a unit
// writes its journal at least three times (its start, each terraform it
// starts, its end), and as a new file each, through a temp file and a
// rename, that cost about 0.5 ms of CPU a unit on this project's ext4.
// Readers hold the instance lock, as the writer does, so none sees a
// write in progress.
func write(p string, j journal, durable bool) error {
	j.Version = version
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if durable {
		err = atomicfile.WriteFile(p, inplace.Pad(b, minSize), atomicfile.Record)
	} else {
		err = inplace.WriteFile(p, b, atomicfile.Record, minSize, false)
	}
	if err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}
