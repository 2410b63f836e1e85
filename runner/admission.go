package runner

// The admission gates (internal/admission) as a Run uses them: the memory
// budget (WithMemoryBudget) and the core gate (WithCoreGate), their waits
// turned into events, command kinds into memory classes, and an OOM kill
// into an OutOfMemoryError.

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/admission"
	"github.com/tfisolate/tfisolate/internal/retry"
)

// NoMemoryBudget, given to WithMemoryBudget, turns the memory budget off:
// only the parallelism bounds how many units run at once. Each unit's
// peak memory is still measured and reported.
const NoMemoryBudget int64 = -1

// memoryOptions are what WithMemoryBudget sets.
type memoryOptions struct {
	budget int64 // > 0: bytes; NoMemoryBudget: off; 0: read from the machine
}

// memoryFile is the record of the peak memory each component used, per
// engine and command class (memClassOf), beside the workdirs (in the
// workdir root, 0600), so the next Run admits units by what they used
// before (internal/admission keeps it).
const memoryFile = ".memory.json"

// memClassOf is the memory class of cmd: commands that use memory
// alike. A read starts no provider or only loads schemas (Init,
// Validate, Output, and the commands that run no plan: ForceUnlock,
// PushErroredState, ExportPlan, ImportPlan); a plan configures providers
// and reads every resource (Plan, SavePlan and the destroy-plan forms);
// an apply also changes them (Apply, ApplyPlan, Destroy). A custom step
// is a class of its own, by name: the runner cannot know what it runs.
func memClassOf(cmd Command) admission.Class {
	switch cmd.kind {
	case kindPlan, kindSavePlan:
		return admission.ClassPlan
	case kindApply, kindApplyPlan, kindDestroy:
		return admission.ClassApply
	case kindStep:
		return admission.StepClass(cmd.name)
	}
	return admission.ClassRead
}

// newMemGate is the Run's memory gate (WithMemoryBudget), its record in
// the workdir root; rs.cpu is made first, since the gate's samples feed
// it.
func (rs *runState) newMemGate() *admission.Memory {
	units := make([]admission.Unit, len(rs.units))
	for i, u := range rs.units {
		units[i] = admission.Unit{ID: rs.g.ID(i), Source: u.Workdir.Source, Expected: u.ExpectedMemory}
	}
	var record string
	if root := rs.cfg.workdirs.Root(); root != "" {
		record = filepath.Join(root, memoryFile)
	}
	return admission.NewMemory(admission.MemoryConfig{Budget: rs.cfg.memory.budget, Record: record, Engine: string(rs.eng.Kind),
		Class: memClassOf(rs.cmd), Parallelism: rs.opts.parallelism, Units: units, Cores: rs.cpu,
		Retryable: rs.retryableAfterOOM, OnWait: rs.memoryWait, Logger: rs.cfg.logger})
}

// memoryWait sends the PhaseMemoryWait event of a unit's wait for
// memory: held back (Queued), admitted after waiting (Queued, with how
// long), or waiting to run again after an out-of-memory kill (Running,
// Retry 1, with its error).
func (rs *runState) memoryWait(w admission.Wait) {
	ev := Event{Unit: rs.g.ID(w.Unit), Phase: PhaseMemoryWait, Status: Queued, Memory: w.Memory, MemoryWait: w.Waited}
	if w.OutOfMemory != nil {
		ev.Status, ev.Retry = Running, 1
		ev.Err = &OutOfMemoryError{Unit: ev.Unit, Peak: w.Memory, Budget: rs.mem.Budget(), Err: w.OutOfMemory}
	}
	rs.em.emit(ev)
}

// runMeasured runs unit i (fn is one attempt) under the memory gate and
// returns what it measured. A kill by the kernel's OOM killer becomes an
// *OutOfMemoryError, retried once (see RetryPolicy.NoOutOfMemoryRetry)
// when fewer units run.
func (rs *runState) runMeasured(ctx context.Context, i int, fn func(context.Context, int) error) (admission.Use, error) {
	use, err := rs.mem.Run(ctx, i, fn)
	if use.OutOfMemory {
		err = &OutOfMemoryError{Unit: rs.g.ID(i), Peak: use.Peak, Budget: rs.mem.Budget(), Err: err}
	}
	return use, err
}

// retryableAfterOOM: the Run's command may be run again after its
// terraform failed with err, killed for memory (see
// RetryPolicy.NoOutOfMemoryRetry).
func (rs *runState) retryableAfterOOM(err error) bool {
	if rs.cfg.retry.NoOutOfMemoryRetry {
		return false
	}
	switch rs.cmd.kind {
	case kindInit, kindPlan, kindSavePlan, kindValidate, kindOutput:
		return true
	case kindApply, kindDestroy:
		return !retry.MayHaveChanged(err)
	}
	return false
}

// OutOfMemoryError is the error of a unit whose terraform or provider
// the kernel's OOM killer killed. It wraps ErrOutOfMemory and the
// failure terraform reported.
type OutOfMemoryError struct {
	Unit   string
	Peak   int64 // the unit's sampled peak, bytes
	Budget int64 // the Run's memory budget, bytes (0: none)
	Err    error
}

func (e *OutOfMemoryError) Error() string {
	budget := "no memory budget"
	if e.Budget > 0 {
		budget = fmt.Sprintf("budget %d MiB", e.Budget>>20)
	}
	return fmt.Sprintf("%v: the kernel killed a process of unit %s for memory (the unit's peak %d MiB, %s): %v",
		ErrOutOfMemory, e.Unit, e.Peak>>20, budget, e.Err)
}

// Unwrap returns ErrOutOfMemory and terraform's failure.
func (e *OutOfMemoryError) Unwrap() []error { return []error{ErrOutOfMemory, e.Err} }

// newCPUGate is the Run's core gate under WithCoreGate (its cores, or
// the Go runtime's GOMAXPROCS for 0), nil without it.
func (rs *runState) newCPUGate() *admission.Cores {
	if !rs.cfg.coreGateSet {
		return nil
	}
	return admission.NewCores(rs.cfg.coreGate, func(w admission.Wait) {
		rs.em.emit(Event{Unit: rs.g.ID(w.Unit), Phase: PhaseCPUWait, Status: Running, CPUWait: w.Waited})
	})
}

// waitForCore is the unit's tfProcess gate: it waits for a core and
// returns what to call when the process has ended.
func (x *unitRun) waitForCore(ctx context.Context) (release func(), err error) {
	if err := x.rs.cpu.Acquire(ctx, x.idx); err != nil {
		return nil, err
	}
	return func() { x.rs.cpu.Release(x.idx) }, nil
}
