package runner

import "fmt"

// Status is where a unit stands. A Result always holds one of Succeeded,
// Failed, Skipped or Canceled; events also use Queued and Running. In
// JSON a Status is its String form.
//
// Skipped is the one status of a unit that never started, whatever the
// cause, which its error names (it wraps ErrSkipped and one of
// ErrDependencyFailed, ErrFailFast, ErrStopped or the cause of the Run's
// cancelled context). Canceled is a unit that started and was
// interrupted. The status names are unchanged in JSON; what changed
// (issue 17 item 12) is that a unit the context kept from starting, once
// "canceled", is now "skipped". A JSON reader that wants "never started"
// can read "started": false, which has always meant it.
type Status int

// Statuses.
const (
	Queued Status = iota
	Running
	Succeeded
	Failed
	Skipped
	Canceled
)

var statusNames = [...]string{"queued", "running", "succeeded", "failed", "skipped", "canceled"}

// String returns the status in lower case, as shown in reports.
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText gives the JSON form: the String form.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the String form back.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("runner: unknown status %q", b)
}

// Phase is the step a unit is in when an Event is sent.
type Phase int

// Phases. A unit sends PhaseQueued first, then PhasePrepare, then those
// of its command (PhaseInit, and PhasePlan, PhaseApply, PhaseDestroy,
// PhaseValidate, PhaseOutput or PhaseStep), PhaseWait whenever it waits
// for a lock, and PhaseDone last. The values are not that order: phases
// added later come last, so the values hosts stored keep their meaning.
const (
	PhaseQueued Phase = iota
	PhasePrepare
	PhaseInit
	PhasePlan
	PhaseApply
	PhaseDestroy
	PhaseDone
	PhaseValidate
	PhaseOutput
	PhaseStep
	// PhaseWait: the unit waits for a lock someone else holds; the
	// event's Wait says which lock, its holder and how long. A host that
	// switches on the phase can ignore it; the unit's phase is still the
	// one of the last other event.
	PhaseWait
	// PhaseMemoryWait is sent when a unit waits for memory under the
	// budget (Event.Memory: what it is expected to use), again when it
	// is admitted (Event.MemoryWait: how long it waited), and when it
	// waits to run again after an OOM kill (Event.Retry set).
	PhaseMemoryWait
	// PhaseCPUWait is sent when a unit's next terraform process waits
	// for a core under WithCoreGate, and again when it may start
	// (Event.CPUWait: how long it waited).
	PhaseCPUWait
	// PhaseProviderFallback is sent when a provider package the unit
	// needs was installed from a source other than the first that would
	// have served it, because that one failed (a network mirror that is
	// down): Event.Fallback names both. The unit goes on; the phase is
	// still the one of the last other event.
	PhaseProviderFallback
	// PhaseModuleFallback is sent when the unit's modules were fetched
	// from their own sources because the module server
	// (WithModuleServer) failed: Event.ModuleFallback names it. The unit
	// goes on, as with PhaseProviderFallback.
	PhaseModuleFallback
)

var phaseNames = [...]string{"queued", "prepare", "init", "plan", "apply", "destroy", "done", "validate", "output", "step", "wait", "memory-wait", "cpu-wait", "provider-fallback", "module-fallback"}

// String returns the phase in lower case, as shown in events.
func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// MarshalText gives the JSON form: the String form.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads the String form back.
func (p *Phase) UnmarshalText(b []byte) error {
	for i, n := range phaseNames {
		if n == string(b) {
			*p = Phase(i)
			return nil
		}
	}
	return fmt.Errorf("runner: unknown phase %q", b)
}
