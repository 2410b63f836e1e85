package runner

import "fmt"

// Status is where a unit stands. A Result always holds one of Succeeded,
// Failed, Skipped or Canceled; events also use Queued and Running.
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

// String returns the status in lower case, as shown in reports.
func (s Status) String() string {
	switch s {
	case Queued:
		return "queued"
	case Running:
		return "running"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	case Canceled:
		return "canceled"
	}
	return fmt.Sprintf("Status(%d)", int(s))
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
)

// String returns the phase in lower case, as shown in events.
func (p Phase) String() string {
	switch p {
	case PhaseQueued:
		return "queued"
	case PhasePrepare:
		return "prepare"
	case PhaseInit:
		return "init"
	case PhasePlan:
		return "plan"
	case PhaseApply:
		return "apply"
	case PhaseDestroy:
		return "destroy"
	case PhaseDone:
		return "done"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}
