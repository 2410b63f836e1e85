package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/journal"
	"github.com/tfisolate/tfisolate/internal/reap"
)

// settleCrashed deals, right after the instance lock is taken and before
// anything runs in the workdir, with the runs of the instance that never
// finished (x.crashed): it notes each one found now, waits (bounded by
// WithCrashedEngineWait and ctx) for an engine one of them left running
// on this host to finish, then ends what that engine left (provider
// plugins, provisioner children), and records all of it in
// x.rec.crashedRuns (Result.Crashed). An engine still running past the
// bound fails the unit with an *EngineRunningError and is never killed:
// it may be writing the state, and a state lock it holds is live, so
// nothing (WithStaleLockRecovery included) runs beside it.
func (x *unitRun) settleCrashed(ctx context.Context, t0 time.Time) error {
	for i := range x.crashed {
		c := &x.crashed[i]
		cr := CrashedRun{PID: c.PID, Host: c.Host, Command: c.Command, Started: c.Started}
		found := !c.Until.Before(t0)
		if found {
			x.out.note(fmt.Sprintf("the previous run of this instance (pid %d on %s, %s, started %s) never finished", c.PID, c.Host, c.Command, c.Started.UTC().Format(time.RFC3339)))
		}
		var err error
		if e := c.Engine; e != nil {
			cr.EnginePID = e.PID
			if e.Output != "" && exists(e.Output) {
				cr.EngineOutput = e.Output
				if found {
					x.out.note(fmt.Sprintf("its terraform (pid %d) wrote its output to %s", e.PID, e.Output))
				}
			}
			if c.OnThisHost() && reap.Supported {
				var seen time.Time
				cr.Waited, cr.Killed, seen, err = x.settleEngine(ctx, *e)
				// Kept in the journal (journal.End writes x.crashed back):
				// the engine's last sign of life, which bounds the state
				// locks it can have left (journal.LeftBy).
				if seen.After(e.Alive) {
					e.Alive = seen
				}
			}
		}
		if found || cr.Waited > 0 || len(cr.Killed) > 0 || err != nil {
			x.rec.crashedRuns = append(x.rec.crashedRuns, cr)
		}
		if err != nil {
			return err
		}
	}
	// With the instance lock held, no running host reads the engine
	// output files no crashed run names.
	journal.SweepOutputs(filepath.Join(x.w.DataDir, engineDir), x.crashed)
	return nil
}

// settleEngine waits for engine e of a crashed run, and any terraform it
// started, to end (never longer than WithCrashedEngineWait), then kills
// what they left in their process group (reap.Settle). seen is when the
// last scan that found an engine still running began (zero when none
// did): the engine ran at least until then.
func (x *unitRun) settleEngine(ctx context.Context, e journal.Engine) (waited time.Duration, killed []string, seen time.Time, err error) {
	g := reap.Group{PGID: e.PID, Start: e.Start, DataDir: x.w.DataDir, Engines: x.engineNames()}
	s, err := reap.Settle(ctx, g, x.rs.cfg.crashWait, func(p reap.Process) {
		x.out.note(fmt.Sprintf("waiting for %s (pid %d), started by the run that never finished, to finish (at most %s)", p.Exe, p.PID, x.rs.cfg.crashWait))
		x.rs.em.emit(Event{Unit: x.id, Phase: PhasePrepare, Status: Running, WaitPID: p.PID})
	})
	if err != nil {
		return s.Waited, nil, s.Seen, err
	}
	if r := s.Running; r != nil {
		return s.Waited, nil, s.Seen, &EngineRunningError{PID: r.PID, Exe: r.Exe, Waited: s.Waited, Workdir: x.dir}
	}
	for _, p := range s.Killed {
		killed = append(killed, p.String())
		x.out.note("killed leftover process " + p.String())
		x.rs.cfg.logger.WarnContext(ctx, "killed leftover process of a crashed run", "unit", x.id, "pid", p.PID, "exe", p.Exe)
	}
	return s.Waited, killed, s.Seen, nil
}

// engineNames are the executable names an engine process has: terraform,
// tofu, and the configured binary's.
func (x *unitRun) engineNames() []string {
	names := []string{"terraform", "tofu", filepath.Base(x.rs.eng.Path)}
	if p, err := filepath.EvalSymlinks(x.rs.eng.Path); err == nil {
		names = append(names, filepath.Base(p))
	}
	return names
}

// reapUnit ends, before the instance lock is released, what this unit's
// terraform processes left running. Each engine's process group is
// checked (one kill(2) each when empty, as it is after a clean exit);
// only when a terraform had to be killed or was interrupted are the
// host's processes searched for the unit's TF_DATA_DIR, to find a
// provisioner's job that left the group.
func (x *unitRun) reapUnit(ctx context.Context, interrupted bool) {
	var found []reap.Process
	for _, e := range x.engines {
		found = append(found, reap.Group{PGID: e.PID, Start: e.Start, DataDir: x.w.DataDir}.Find()...)
	}
	if interrupted {
		for _, p := range reap.Scan(x.w.DataDir) {
			if !slices.ContainsFunc(found, func(f reap.Process) bool { return f.PID == p.PID }) {
				found = append(found, p)
			} else {
				reap.Close([]reap.Process{p})
			}
		}
	}
	defer reap.Close(found)
	for _, p := range reap.Kill(found) {
		x.rs.mem.Reaped(x.idx, p.PID) // a SIGKILL of ours, not the kernel's
		x.out.note("killed leftover process " + p.String())
		x.rs.cfg.logger.WarnContext(ctx, "killed leftover process", "unit", x.id, "pid", p.PID, "exe", p.Exe)
	}
}

// engineStarted records a terraform process of this unit as it starts:
// in the journal (so a later run finds it if this host dies) and for
// reapUnit.
func (x *unitRun) engineStarted(pid int, output string) {
	x.rs.mem.Track(x.idx, pid)
	e := journal.Engine{PID: pid, Start: reap.StartTime(pid), Output: output, Began: time.Now()}
	x.engines = append(x.engines, e)
	if err := journal.RecordEngine(x.w.DataDir, e); err != nil {
		x.rs.cfg.logger.Warn("cannot record terraform in the instance journal", "unit", x.id, "pid", pid, "err", err)
	}
}

// journalLock is what the journal needs of l to tell whether a crashed
// run left it (journal.LeftBy); a nil l gives a lock that none left.
func journalLock(l *StateLock) journal.Lock {
	if l == nil {
		return journal.Lock{}
	}
	return journal.Lock{ID: l.ID, Who: l.Who, Created: l.Created}
}
