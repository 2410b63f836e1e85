package runner

import "errors"

// Sentinel errors. Every error the package returns wraps one of these (or a
// context error), so callers can branch with errors.Is.
var (
	// ErrInvalidUnit reports a unit that cannot be run as given (empty ID,
	// a dependency on itself, an ID that cannot be derived).
	ErrInvalidUnit = errors.New("invalid unit")
	// ErrDuplicateUnit reports two units with the same ID.
	ErrDuplicateUnit = errors.New("duplicate unit id")
	// ErrUnknownDependency reports a DependsOn entry naming no unit.
	ErrUnknownDependency = errors.New("unknown dependency")
	// ErrCycle reports a dependency cycle; the message names the cycle path.
	ErrCycle = errors.New("dependency cycle")
	// ErrBadOption reports an option with an invalid value.
	ErrBadOption = errors.New("bad option")
	// ErrUnknownCommand reports a Command value outside Init..Destroy.
	ErrUnknownCommand = errors.New("unknown command")
	// ErrNoTerraform reports that no terraform binary could be found.
	ErrNoTerraform = errors.New("terraform not found")
	// ErrSkipped is wrapped by the error of every unit that did not run.
	ErrSkipped = errors.New("skipped")
	// ErrDependencyFailed is wrapped (with ErrSkipped) by the error of a unit
	// skipped because a unit it depends on failed; the message names it.
	ErrDependencyFailed = errors.New("dependency failed")
	// ErrFailFast is wrapped (with ErrSkipped) by the error of a unit that
	// never started because WithFailFast stopped the run.
	ErrFailFast = errors.New("stopped by fail-fast")
	// ErrInit is wrapped by the error of a unit whose shared (singleflight)
	// provider setup failed; the leader's cause is wrapped too.
	ErrInit = errors.New("provider setup failed")
	// ErrModules is wrapped by the error of a unit whose shared
	// (singleflight) fetch of remote modules failed; the leader's cause is
	// wrapped too.
	ErrModules = errors.New("module fetch failed")
	// ErrStateLocked reports a state lock still held by someone else when
	// the lock timeout ran out.
	ErrStateLocked = errors.New("state locked")
)
