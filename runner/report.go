package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// Event reports progress of one unit. Events are delivered to the
// WithEvents callback one at a time, in the order they happened. Its JSON
// form is documented on MarshalJSON.
type Event struct {
	Unit   string
	Phase  Phase
	Status Status
	Time   time.Time
	// Engine is the terraform (or tofu) the Run uses.
	Engine Engine
	// WaitPID is set on the event sent when the unit starts waiting for
	// a process an earlier, crashed run of its instance left running (its
	// terraform, still finishing); see WithCrashedEngineWait.
	WaitPID int
	// Wait is set on the events a unit sends while someone else's lock
	// keeps it waiting (see Wait), so a progress display can say "waiting
	// for the state lock held by ..." instead of "apply running".
	Wait *Wait
	// Retry is set (1, 2, ...) on the event sent when a phase is retried
	// after a transient error; Err is that error.
	Retry int
	Err   error // set with PhaseDone when the unit did not succeed, and with a retry
	// Memory is set with PhaseMemoryWait: the memory the unit is expected
	// to use (0 for a component never measured) while it waits, its
	// peak when it waits to run again after an OOM kill, in bytes.
	Memory int64
	// MemoryWait is set with PhaseMemoryWait when the unit is admitted
	// after waiting for memory: how long it waited.
	MemoryWait time.Duration
	// CPUWait is set with PhaseCPUWait when the unit's terraform process
	// may start after waiting for a core: how long it waited.
	CPUWait time.Duration
	// Fallback is set with PhaseProviderFallback: the source that failed
	// (a network mirror by its URL, without credentials or query), how,
	// and the source the package was installed from.
	Fallback *pluginc.Fallback
	// ModuleFallback is set with PhaseModuleFallback: the module server
	// that failed (by its URL), how, and where the modules came from.
	ModuleFallback *ModuleFallback
}

// Wait describes a unit waiting for a lock someone else holds. A unit
// sends an event with a Wait (PhaseWait, Status Running) when a
// wait starts, when the holder it learns of changes or, for a state lock,
// at each new attempt, and when the wait ends (Done). The waits also add
// up in Result.LockWait.
type Wait struct {
	// Lock is WaitInstanceLock or WaitStateLock.
	Lock string
	// Instance is the instance lock's holder as it recorded itself: the
	// process, host and since when (nil until it has recorded itself).
	Instance *workdir.Holder
	// State is the state lock's holder as terraform reported it (nil
	// when terraform did not say).
	State *StateLock
	// Waited is how long this wait has lasted so far; with Done, in all
	// (for a state lock, up to the start of the attempt that got it).
	Waited time.Duration
	// Next is set for a state lock: terraform itself waits for the lock
	// in the unit's next attempt, at most this long (8 s at most). No
	// new Wait event by then means that attempt got the lock and the
	// command is running; the Done event only comes when that attempt
	// ends, since terraform does not say when it took the lock.
	Next time.Duration
	// Done is set on the last event of a wait: the lock was taken, or
	// the unit gave up (its context ended, or WithLockTimeout ran out).
	Done bool
}

// The locks a Wait can be for.
const (
	// WaitInstanceLock is the workdir's cross-process lock on the
	// instance (one run of an instance at a time).
	WaitInstanceLock = "instance"
	// WaitStateLock is terraform's lock on the unit's state.
	WaitStateLock = "state"
)

// Result is the outcome of one unit. Its JSON form is documented on
// MarshalJSON.
type Result struct {
	Unit   string
	Status Status
	Err    error
	// Started is false for a unit that never began; such a unit is
	// always Skipped, its error wrapping ErrSkipped and the cause: a
	// failed dependency (ErrDependencyFailed), fail-fast (ErrFailFast),
	// a Stop (ErrStopped) or the Run's context (its cause, e.g.
	// context.Canceled).
	Started bool
	// Duration is the unit's run (End - Start), its waits for memory and
	// retries included.
	Duration time.Duration
	// Start and End are when the unit's run began and ended; both zero
	// for a unit that never started.
	Start, End time.Time
	// SkippedFor is, for a unit Skipped because a unit it depends on
	// failed (ErrDependencyFailed), the ID of that failed unit, which
	// may be a dependency of a dependency; "" otherwise.
	SkippedFor string
	// LockWait is the time spent waiting for locks held by others: the
	// instance lock of the workdir (not the refresh of its files) and
	// terraform state locks.
	LockWait time.Duration
	// StateLock describes the holder of the state lock last waited for,
	// as terraform reported it; nil if none was met.
	StateLock *StateLock
	// RecoveredLocks are the state locks released because the instance's
	// journal proved that an earlier, crashed run of it left them (see
	// WithStaleLockRecovery).
	RecoveredLocks []StateLock
	// Crashed lists the earlier runs of this instance that never
	// finished (their host died, or their terraform had to be killed), as
	// the instance's journal recorded them, when this run found them or
	// had to wait for or end what they left running.
	Crashed []CrashedRun
	// InstanceLock describes the holder of the instance lock when the
	// unit had to wait for it; nil if it did not wait.
	InstanceLock *workdir.Holder
	// Retries counts the attempts repeated after transient errors (and
	// after an OOM kill).
	Retries int
	// MemoryPeak is the highest resident memory of the unit's process
	// trees (terraform, its provider and provisioner plugins, their
	// children), sampled from /proc while they ran, in bytes; 0 where
	// it cannot be measured (no /proc, custom steps' own terraform).
	MemoryPeak int64
	// MemoryWait is how long the unit waited for memory under the
	// budget (see WithMemoryBudget).
	MemoryWait time.Duration
	// CPUWait is how long the unit's terraform processes waited for a
	// core in all (see WithCoreGate).
	CPUWait time.Duration
	// OutOfMemory is set when the kernel's OOM killer killed the unit's
	// terraform or a plugin of it; Err then wraps ErrOutOfMemory.
	OutOfMemory bool
	// Unchanged is set when WithSkipUnchanged skipped the unit because
	// its inputs are those of its last successful apply.
	Unchanged bool
	// InitSkipped is set when terraform init was not run because nothing
	// it depends on changed since the instance's last successful init.
	InitSkipped bool
	// HasChanges is set by Plan and SavePlan when the plan is not empty,
	// and by Apply, ApplyPlan and Destroy when they changed something.
	HasChanges bool
	// Summary counts what terraform planned (Plan, SavePlan) or did
	// (Apply, ApplyPlan, Destroy), from its own change summary; nil for
	// other commands, or when terraform gave none.
	Summary *ChangeSummary
	// Plan describes the saved plan (SavePlan) or the plan that was
	// applied (ApplyPlan).
	Plan *PlanSummary
	// Outputs are the root module's outputs after Apply, ApplyPlan or
	// Output, by name.
	Outputs map[string]OutputValue
	// Data is whatever a custom step recorded with Handle.Record.
	Data any
	// Log is the path of the unit's log file.
	Log string
}

// CrashedRun is an earlier run of a unit's instance that never finished,
// and what the unit did about what it left.
type CrashedRun struct {
	// PID and Host are the host process that ran it; Command is what it
	// ran; Started is when it began.
	PID     int
	Host    string
	Command string
	Started time.Time
	// EnginePID is the last terraform process it started (0 if none was
	// recorded); EngineOutput is that process's stdout file, kept in the
	// instance's data dir when the host died before reading it (its
	// stderr is beside it, .err).
	EnginePID    int
	EngineOutput string
	// Waited is how long this run waited for that engine to finish.
	Waited time.Duration
	// Killed lists the processes it left that this run ended once no
	// engine was running (provider plugins, provisioner children), each
	// as its PID and executable name.
	Killed []string
}

// EngineRunningError reports that the engine an earlier, crashed run of
// the unit's instance started is still running after the wait
// WithCrashedEngineWait allows. The SDK never kills it: it may be writing
// the state. It wraps ErrEngineRunning.
type EngineRunningError struct {
	PID    int
	Exe    string // its executable's name
	Waited time.Duration
	// Workdir is where it runs.
	Workdir string
}

func (e *EngineRunningError) Error() string {
	return fmt.Sprintf("%v: %s (pid %d) in %s, started by a run of this instance that never finished, is still running after waiting %s; "+
		"it may be writing the state, so it is not killed. Let it finish (or interrupt it: kill -INT %d, and wait until it exits), then run again",
		ErrEngineRunning, e.Exe, e.PID, e.Workdir, e.Waited.Round(time.Millisecond), e.PID)
}

// Unwrap returns ErrEngineRunning.
func (e *EngineRunningError) Unwrap() error { return ErrEngineRunning }

// OutputValue is one root-module output. Value is its JSON encoding.
type OutputValue struct {
	Value     json.RawMessage
	Type      json.RawMessage
	Sensitive bool
}

// ChangeSummary counts resources the way terraform's summary line does
// ("Plan: 1 to add, 0 to change, 0 to destroy"; a replacement is one add
// and one destroy).
type ChangeSummary struct {
	Add, Change, Destroy, Import int
}

// Total is the number of changes of every kind.
func (s ChangeSummary) Total() int { return s.Add + s.Change + s.Destroy + s.Import }

// PlanSummary describes a saved plan.
type PlanSummary struct {
	// File is the saved plan (terraform's binary format), JSONFile the
	// terraform show -json document of it, both in the instance's workdir.
	// Both hold sensitive values as terraform renders them (in clear):
	// they are written 0600 in a 0700 dir, and are not for a PR comment
	// as they are; Changes and the counts below hold no values.
	File, JSONFile string
	// RedactedJSONFile is JSONFile with every sensitive value replaced by
	// SensitiveMarker (values terraform marks sensitive, and copies of
	// them elsewhere in the document), still a plan document with the
	// same resources and actions: the one for a PR comment or a shared
	// artifact. Written 0644 (in the same 0700 dir).
	RedactedJSONFile string
	// DestroyPlan is set for a plan made with -destroy.
	DestroyPlan bool
	// Add, Change, Destroy and Import count resources the way terraform's
	// summary line does (a replacement is one add and one destroy).
	Add, Change, Destroy, Import int
	// Changes lists every resource with a planned action, in address order.
	Changes []ResourceChange
	// OutputChanges is set when only outputs change.
	OutputChanges bool
}

// ResourceChange is one resource's planned action.
type ResourceChange struct {
	Address string
	// Actions are terraform's: ["create"], ["update"], ["delete"],
	// ["delete","create"] or ["create","delete"] (replace), ["read"].
	Actions []string
	// Importing is set when the resource is imported by the plan.
	Importing bool
}

// StateLock is a terraform state lock's info as terraform reports it.
type StateLock struct {
	ID        string
	Path      string
	Operation string
	Who       string
	Version   string
	Created   time.Time
	Info      string
}

// String describes the holder in one line.
func (l *StateLock) String() string {
	if l == nil {
		// Not a holder's name: terraform's lock error named none (the pg
		// backend, or the lock was let go between two attempts).
		return "the holder is not known (the engine named none)"
	}
	s := "ID " + l.ID
	if l.Who != "" {
		s += ", Who " + l.Who
	}
	if l.Operation != "" {
		s += ", Operation " + l.Operation
	}
	if !l.Created.IsZero() {
		s += ", Created " + l.Created.UTC().Format(time.RFC3339)
	}
	return s
}

// Engine says which terraform binary ran: its kind ("terraform" or
// "tofu"), version and path.
type Engine struct {
	Kind    string
	Version string
	Path    string
}

// Report holds one Result per selected unit, in the order the units were
// given to Run. Its JSON form is documented on MarshalJSON.
type Report struct {
	Command string
	Engine  Engine
	Results []Result
	// Warnings are what the Run has to say once, not per unit: a user CLI
	// config left out (one that does not parse, or a TF_CLI_CONFIG_FILE
	// naming a missing file); a provider package installed from the
	// plugin cache's next source because one before it failed (a network
	// mirror that is down: pluginc.Fallback's String, naming the mirror
	// and the source used). Each is also in the log and output of the
	// unit that met it first and in the logger (Warn). And a memory
	// record (WithMemoryBudget) a newer release wrote, not used and left
	// as it is (in the logger too; no unit met it).
	Warnings []string
	// Duration is the wall time of the Run.
	Duration time.Duration
}

// Err joins the errors of the units that failed or were canceled, of
// those the Run's context kept from starting (each wraps the context's
// cause), and, when a Stop kept units from starting, one error wrapping
// ErrStopped that names them; nil when all went through. Units skipped
// because a dependency failed or by fail-fast are left out: their cause
// is already in it.
func (r *Report) Err() error {
	if r == nil {
		return nil
	}
	var errs []error
	var stopped []string
	for _, res := range r.Results {
		switch {
		case res.Status == Failed || res.Status == Canceled:
			errs = append(errs, fmt.Errorf("unit %s: %w", res.Unit, res.Err))
		case res.Status == Skipped && errors.Is(res.Err, ErrStopped):
			stopped = append(stopped, res.Unit)
		case res.Status == Skipped && !errors.Is(res.Err, ErrDependencyFailed) && !errors.Is(res.Err, ErrFailFast):
			errs = append(errs, fmt.Errorf("unit %s: %w", res.Unit, res.Err))
		}
	}
	if len(stopped) > 0 {
		errs = append(errs, fmt.Errorf("%w: %d unit(s) never started: %s", ErrStopped, len(stopped), strings.Join(stopped, ", ")))
	}
	return errors.Join(errs...)
}

// Result returns the result of the unit with the given ID.
func (r *Report) Result(id string) (Result, bool) {
	if r != nil {
		for _, res := range r.Results {
			if res.Unit == id {
				return res, true
			}
		}
	}
	return Result{}, false
}

// NotStarted lists the IDs of the units that never began, in report
// order.
func (r *Report) NotStarted() []string {
	var out []string
	if r != nil {
		for _, res := range r.Results {
			if !res.Started {
				out = append(out, res.Unit)
			}
		}
	}
	return out
}

// Count returns how many results have status s.
func (r *Report) Count(s Status) int {
	n := 0
	if r != nil {
		for _, res := range r.Results {
			if res.Status == s {
				n++
			}
		}
	}
	return n
}
