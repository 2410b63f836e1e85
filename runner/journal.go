package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
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
// written atomically and synced. Otherwise the journal is left with no
// run under way, in place, for the next run to rewrite rather than
// create.
func endJournal(dataDir string, crashed []journalRun, killed bool, now time.Time) error {
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
// host as this process (so the same terraform identity), while that run
// was under way, and within lockTakeWindow of the start of the last
// terraform it ran: terraform takes its state lock right as it starts, so
// a lock created later (by a live process of the same user and host that
// took it after the crash: another checkout, a second CI job, tofu by
// hand) is never taken for the crashed run's. nil when none did, when the
// run recorded no terraform, or when l does not say who holds it and
// since when.
func leftBy(l *StateLock, crashed []journalRun) *journalRun {
	if l == nil || l.ID == "" || l.Who == "" || l.Created.IsZero() {
		return nil
	}
	who, host := lockWho()
	for i := range crashed {
		c := &crashed[i]
		e := c.Engine
		if e == nil || e.Began.IsZero() {
			continue
		}
		if c.Who == who && c.Host == host && l.Who == who &&
			!l.Created.Before(c.Started) && !l.Created.After(c.Until) &&
			!l.Created.Before(e.Began.Add(-clockSlack)) && !l.Created.After(e.Began.Add(lockTakeWindow)) {
			return c
		}
	}
	return nil
}

// lockTakeWindow bounds how long after it starts a terraform of the
// runner's takes its state lock (it loads the configuration, the backend
// and the providers first; the runner passes -lock-timeout=0 and retries
// whole commands, each a new process); clockSlack allows for the lock's
// time being taken on terraform's side of the same clock.
const (
	lockTakeWindow = 2 * time.Minute
	clockSlack     = time.Second
)
