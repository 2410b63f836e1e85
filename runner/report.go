package runner

import (
	"errors"
	"fmt"
	"time"
)

// Event reports progress of one unit. Events are delivered to the
// WithEvents callback one at a time, in the order they happened.
type Event struct {
	Unit   string
	Phase  Phase
	Status Status
	Time   time.Time
	Err    error // set with PhaseDone when the unit did not succeed
}

// Result is the outcome of one unit.
type Result struct {
	Unit     string
	Status   Status
	Err      error
	Duration time.Duration
	// LockWait is the time spent waiting for locks held by others: the
	// instance lock of the workdir (not the refresh of its files) and
	// terraform state locks.
	LockWait time.Duration
	// LockHolder describes who held the state lock last waited for
	// (terraform's "ID" and "Who"), empty if none was met.
	LockHolder string
	// HasChanges is set by Plan when the plan is not empty.
	HasChanges bool
	// Log is the path of the unit's log file.
	Log string
}

// Report holds one Result per selected unit, in the order the units were
// given to Run.
type Report struct {
	Results []Result
}

// Err joins the errors of the units that failed or were canceled; nil when
// none did. Skipped units are left out: their cause is already in it.
func (r *Report) Err() error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, res := range r.Results {
		if res.Status == Failed || res.Status == Canceled {
			errs = append(errs, fmt.Errorf("unit %s: %w", res.Unit, res.Err))
		}
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
