package queue

import "fmt"

// Status is the final state of a selected unit in a Run.
type Status int

const (
	// Succeeded: run returned nil.
	Succeeded Status = iota + 1
	// Failed: run returned an error while the run's context was live.
	Failed
	// Skipped: the unit never started because a unit it waits for failed,
	// because of fail-fast, or because the run was drained.
	Skipped
	// Canceled: run returned an error after the run's context ended, or
	// the context ended before the unit could start.
	Canceled
)

var statusNames = [...]string{Succeeded: "succeeded", Failed: "failed", Skipped: "skipped", Canceled: "canceled"}

// String returns the status in lower case ("succeeded"), or "Status(n)"
// for a value outside the constants.
func (s Status) String() string {
	if s >= Succeeded && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}
