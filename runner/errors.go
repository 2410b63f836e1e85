package runner

import (
	"errors"

	"github.com/tfisolate/tfisolate/internal/queue"
	"github.com/tfisolate/tfisolate/workdir"
)

// Sentinel errors. Every error the package returns wraps one of these (or a
// context error), so callers can branch with errors.Is.
var (
	// ErrInvalidUnit reports a unit that cannot be run as given (empty ID,
	// a dependency on itself, an invalid workdir spec, two units with the
	// same stack and instance).
	ErrInvalidUnit = queue.ErrInvalidUnit
	// ErrDuplicateUnit reports two units with the same ID.
	ErrDuplicateUnit = queue.ErrDuplicateUnit
	// ErrUnknownDependency reports a DependsOn entry naming no unit.
	ErrUnknownDependency = queue.ErrUnknownDependency
	// ErrCycle reports a dependency cycle; the message names the cycle path.
	ErrCycle = queue.ErrCycle
	// ErrNoMatch reports a filter pattern that matches no unit; the
	// message names it.
	ErrNoMatch = queue.ErrNoMatch
	// ErrBadOption reports an option with an invalid value.
	ErrBadOption = errors.New("bad option")
	// ErrUnknownCommand reports an invalid Command (the zero value, or a
	// step without a function or name).
	ErrUnknownCommand = errors.New("unknown command")
	// ErrNilContext reports a nil context given to Run.
	ErrNilContext = errors.New("nil context")
	// ErrNoTerraform reports that no terraform binary could be found.
	ErrNoTerraform = errors.New("terraform not found")
	// ErrSkipped is wrapped by the error of every unit that did not run.
	ErrSkipped = queue.ErrSkipped
	// ErrDependencyFailed is wrapped (with ErrSkipped) by the error of a unit
	// skipped because a unit it depends on failed; the message names it.
	ErrDependencyFailed = queue.ErrDependencyFailed
	// ErrFailFast is wrapped (with ErrSkipped) by the error of a unit that
	// never started because WithFailFast stopped the run.
	ErrFailFast = queue.ErrFailFast
	// ErrStopped is wrapped (with ErrSkipped) by the error of a unit that
	// never started because a Stop was requested.
	ErrStopped = queue.ErrStopped
	// ErrInterrupted is the cause of the cancellation of running units at
	// a Stop's second request.
	ErrInterrupted = errors.New("interrupted by stop request")
	// ErrInit is wrapped by the error of a unit whose shared (singleflight)
	// provider setup failed; the leader's cause is wrapped too.
	ErrInit = errors.New("provider setup failed")
	// ErrModules is wrapped by the error of a unit whose shared
	// (singleflight) fetch of remote modules failed; the leader's cause is
	// wrapped too.
	ErrModules = errors.New("module fetch failed")
	// ErrStateLocked reports a state lock still held by someone else when
	// the lock timeout ran out. The message says who holds it, since
	// when, and how to release it if it is stale.
	ErrStateLocked = errors.New("state locked")
	// ErrNotApplied reports a dependency outside a Run's selection (run
	// on another machine, or not yet) whose outputs a Generate needs,
	// while its state holds none of the outputs its configuration
	// declares: it has not been applied. The dependent fails naming it.
	ErrNotApplied = errors.New("dependency not applied")
	// ErrNoPlan reports an ApplyPlan of a unit with no saved plan.
	ErrNoPlan = errors.New("no saved plan")
	// ErrStalePlan reports an ApplyPlan of a unit whose saved plan no
	// longer matches its workdir, lock file, terraform or arguments; the
	// message says what changed.
	ErrStalePlan = errors.New("saved plan is stale")
	// ErrLocalState reports a plan bundle of a unit whose state is local
	// to the machine: terraform's local backend (no backend block, or a
	// "local" one) keeps it in files where the unit runs, so a bundle
	// applied on another machine would be applied against that machine's
	// own, empty state and create everything a second time. ExportPlan
	// refuses to write such a bundle and ImportPlan to take one (wrapping
	// ErrPlanBundle too); the message names the unit and its backend.
	ErrLocalState = errors.New("state is local to the machine")
	// ErrBackendChanged reports a backend configuration that changed
	// since the instance's last init while its old state may hold
	// resources; see BackendChangedError.
	ErrBackendChanged = errors.New("backend changed")
	// ErrStateNotSaved reports an apply whose terraform changed
	// infrastructure but could not save the state, and every later
	// command refused until that state is pushed; see StateNotSavedError.
	ErrStateNotSaved = errors.New("state not saved")
	// ErrSourceState is wrapped by the error of a unit whose component
	// source holds local state with resources that the instance has not
	// adopted (see workdir.Spec.AdoptState): nothing ran.
	ErrSourceState = workdir.ErrSourceState
	// ErrAdopted is wrapped, with ErrSourceState, by the error of a unit
	// whose workdir spec asks to adopt a state another instance adopted
	// already (see workdir.Spec.AdoptState and workdir.AdoptedError, which
	// names the owner): nothing ran and nothing was copied.
	ErrAdopted = workdir.ErrAdopted
	// ErrStateDamaged is wrapped by the error of a unit whose local state
	// file is empty or cut off while the instance had a state (see
	// workdir.Workdir.CheckState): nothing ran; the message says how to
	// recover.
	ErrStateDamaged = workdir.ErrStateDamaged
	// ErrNewerFormat is wrapped by the error about a record or bundle a
	// newer release of the SDK wrote: a unit's stamp, init, applied,
	// journal or saved plan record, a plan bundle, the root's register of
	// adoptions ("written by a newer release: format N; this release
	// reads up to M; upgrade this job"). The unit fails, the record is
	// left as it is. A newer memory record is not an error: the Run goes
	// on without it and says so once in Report.Warnings.
	ErrNewerFormat = workdir.ErrNewerFormat
	// ErrPanic is wrapped by the error of a unit whose run panicked (in
	// the SDK, a library it uses, or the unit's Generate): the unit fails
	// with the panic's message and stack, every other unit runs on.
	ErrPanic = errors.New("panic")
	// ErrWorkspace reports a unit whose workspace select exited 0 but
	// left another workspace selected; nothing else ran.
	ErrWorkspace = errors.New("workspace not selected")
	// ErrEngineRunning is wrapped by an *EngineRunningError: the engine an
	// earlier, crashed run of the instance left running still runs.
	ErrEngineRunning = errors.New("the engine of a crashed run is still running")
	// ErrGenerate is wrapped by the error of a unit whose Generate
	// function failed.
	ErrGenerate = errors.New("generate files")
	// ErrOutOfMemory is wrapped by an *OutOfMemoryError: the kernel's
	// OOM killer killed the unit's terraform or one of its plugins.
	ErrOutOfMemory = errors.New("out of memory")
	// ErrHandleDone reports a Handle used after its step returned (or
	// one the runner did not make): Exec is refused, and an Exec still
	// running when the step returned is interrupted.
	ErrHandleDone = errors.New("handle used after its step returned")
)
