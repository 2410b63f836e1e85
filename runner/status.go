package runner

import "fmt"

// Status is where a unit stands. A Result always holds one of Succeeded,
// Failed, Skipped or Canceled; events also use Queued and Running. In
// JSON a Status is its String form.
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

// Phases, in the order a unit goes through them. A unit sends PhaseQueued
// first and PhaseDone last; the ones in between depend on the command.
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
	// PhaseMemoryWait is sent when a unit waits for memory under the
	// budget (Event.Memory: what it is expected to use), again when it
	// is admitted (Event.MemoryWait: how long it waited), and when it
	// waits to run again after an OOM kill (Event.Retry set).
	PhaseMemoryWait
)

var phaseNames = [...]string{"queued", "prepare", "init", "plan", "apply", "destroy", "done", "validate", "output", "step", "memory-wait"}

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
