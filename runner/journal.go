package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/inplace"
)

// The journal records, in an instance's data dir and under its instance
// lock, the run of that instance under way, and the earlier runs that
// never finished. Holding the instance lock proves the run that wrote
// "current" is gone: a flock dies with its process. So a journal found
// with a current run names a run that crashed (or whose terraform had to
// be killed), and the state locks it may have left can be told from
// anyone else's by their holder and creation time.
const journalName = "tfisolate-journal.json"

// journalKeep bounds how many unfinished runs are remembered, and for how
// long: a lock older than that is not this SDK's to prove.
const (
	journalKeep   = 8
	journalMaxAge = 7 * 24 * time.Hour
)

type journalRun struct {
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
	Engine *journalEngine `json:"engine,omitempty"`
}

// journalEngine names one terraform (or shim) process: its PID, which
// is also its process group (it is started as a group leader), and its
// start time, so that a process that reused the PID is never taken for
// it.
type journalEngine struct {
	PID int `json:"pid"`
	// Start is in clock ticks since boot (/proc/PID/stat); 0 where
	// unknown (outside Linux), and then the process is never looked for.
	Start uint64 `json:"start,omitempty"`
	// Output is its stdout file (in engineDir; stderr is beside it, .err).
	Output string `json:"output,omitempty"`
	// Began is when the runner started it (wall clock): a state lock of
	// this engine was taken soon after (see leftBy).
	Began time.Time `json:"began,omitzero"`
	// Alive is the latest moment a runner saw it running, when one did:
	// its own host, which had to kill it (the last write to its output,
	// read before the host removed the files), or a later run that
	// waited for it (the start of the last scan that found it). A
	// later run of an engine whose host died reads its output files'
	// times itself (see lastAlive).
	Alive time.Time `json:"alive,omitzero"`
}

// lastAlive is the engine's last sign of life that the runner can prove:
// the latest of Alive and the last write to its output files, which only
// the engine writes (the kernel dates a write from a clock that never
// runs ahead of the wall clock, so the engine ran then). Zero when there
// is none. It is never "now": a run found crashed may have died long
// before the next run of its instance looked.
func (e *journalEngine) lastAlive() time.Time {
	t := e.Alive
	if e.Output == "" {
		return t
	}
	for _, p := range []string{e.Output, strings.TrimSuffix(e.Output, ".out") + ".err"} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

type journal struct {
	Current *journalRun  `json:"current,omitempty"`
	Crashed []journalRun `json:"crashed,omitempty"`
}

// lockWho is the Who terraform writes into the lock info of a lock it
// takes from this process's user and host.
func lockWho() (who, host string) {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ = os.Hostname()
	return name + "@" + host, host
}

// beginJournal reads the instance's journal, moves a run it finds under
// way into the crashed list, and records this run as current. It returns
// the crashed runs.
//
// The write is not synced, like recordEngine's, and made in place (see
// writeJournal): what a later run does with a crashed run (wait for
// its engine, take back a state lock it left, see leftBy) needs the
// engine record, which a machine that goes down may lose anyway, and a
// host process that dies leaves both in the page cache. Two fsyncs a
// unit bought nothing.
func beginJournal(dataDir, command string, now time.Time) ([]journalRun, error) {
	p := filepath.Join(dataDir, journalName)
	var j journal
	if b, err := os.ReadFile(p); err == nil {
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
		if now.Sub(c.Started) < journalMaxAge {
			kept = append(kept, c)
		}
	}
	if len(kept) > journalKeep {
		kept = kept[len(kept)-journalKeep:]
	}
	who, host := lockWho()
	j = journal{Current: &journalRun{PID: os.Getpid(), Host: host, Who: who, Command: command, Started: now}, Crashed: kept}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJournal(p, j, false); err != nil {
		return nil, err
	}
	return kept, nil
}

// endJournal records that this run ended. A run whose terraform had to be
// killed may have left state locks, so it stays in the crashed list,
// written atomically and synced, with alive, the killed terraform's last
// sign of life (tfcmd's KilledSign: its output files are gone by now).
// Otherwise the journal is left with no run under way, in place, for
// the next run to rewrite rather than create.
func endJournal(dataDir string, crashed []journalRun, killed bool, alive, now time.Time) error {
	p := filepath.Join(dataDir, journalName)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
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
		return writeJournal(p, j, false)
	}
	return writeJournal(p, j, true)
}

// recordEngine records, as the current run's engine, a terraform process
// that has just started. The write is in place and not synced (see
// writeJournal): it only has to survive the host's process, not the
// machine (a machine that goes down takes the engine with it).
func recordEngine(dataDir string, e journalEngine) error {
	p := filepath.Join(dataDir, journalName)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Current == nil {
		return nil
	}
	j.Current.Engine = &e
	return writeJournal(p, j, false)
}

// journalMinSize is the size a journal is created with, so that records
// of any usual length are rewritten in place without growing it.
const journalMinSize = 1024

// writeJournal writes j to the journal at p. A durable write replaces
// the journal atomically and synced. Any other is made in place and not
// synced (internal/inplace: one write at offset 0, within a page, so a
// host killed mid-write leaves the old record or the new one): a unit
// writes its journal at least three times (its start, each terraform it
// starts, its end), and as a new file each, through a temp file and a
// rename, that cost about 0.5 ms of CPU a unit on this project's ext4.
// Readers hold the instance lock, as the writer does, so none sees a
// write in progress.
func writeJournal(p string, j journal, durable bool) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if durable {
		err = atomicfile.WriteFile(p, inplace.Pad(b, journalMinSize), 0o644)
	} else {
		err = inplace.WriteFile(p, b, 0o644, journalMinSize, false)
	}
	if err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

// leftBy returns the crashed run that provably left lock l: same user and
// host as this process (so the same terraform identity), created while
// that run's last terraform could have taken it: no earlier than (within
// clockSlack) its start, no later than lockTakeWindow after it
// (terraform takes its state lock right as it starts), and never after
// the engine's last sign of life (lastAlive). So a lock a live process
// of the same user and host took once the crashed run's engine was gone
// (another checkout, a second CI job, tofu by hand, even seconds after
// the crash) is never taken for the crashed run's; nor is one when the
// journal proves no sign of life at all. A lock's time is taken at the
// latest instant it can stand for (see latestCreation). nil when none
// did, when the run recorded no terraform, or when l does not say who
// holds it and since when.
func leftBy(l *StateLock, crashed []journalRun) *journalRun {
	if l == nil || l.ID == "" || l.Who == "" || l.Created.IsZero() {
		return nil
	}
	who, host := lockWho()
	created := latestCreation(l.Created)
	for i := range crashed {
		c := &crashed[i]
		e := c.Engine
		if e == nil || e.Began.IsZero() {
			continue
		}
		end := e.lastAlive()
		if take := e.Began.Add(lockTakeWindow); take.Before(end) {
			end = take
		}
		if c.Who == who && c.Host == host && l.Who == who &&
			!l.Created.Before(c.Started) && !l.Created.Before(e.Began.Add(-clockSlack)) &&
			!created.After(end) {
			return c
		}
	}
	return nil
}

// latestCreation is the latest instant a lock whose creation time reads
// t can have been created at. Terraform and OpenTofu write it to the
// nanosecond (RFC 3339 in the backend, Go's time.Time.String in the lock
// error, which drops trailing zeros); a time written to the second, or
// the millisecond, stands for the whole second, or millisecond, so its
// end is what is compared with the engine's last sign of life: a lock
// taken after the engine was gone is never let in by rounding.
func latestCreation(t time.Time) time.Time {
	unit := time.Nanosecond
	for unit < time.Second && t.Nanosecond()%int(10*unit) == 0 {
		unit *= 10
	}
	return t.Add(unit - time.Nanosecond)
}

// lockTakeWindow bounds how long after it starts a terraform of the
// runner's takes its state lock (it loads the configuration, the backend
// and the providers first; the runner passes -lock-timeout=0 and retries
// whole commands, each a new process); clockSlack allows for the lock's
// time being taken on terraform's side of the same clock, before the
// runner noted the start (only the window's start: its end is a proven
// sign of life, with no slack).
const (
	lockTakeWindow = 2 * time.Minute
	clockSlack     = time.Second
)
