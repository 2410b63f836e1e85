package runner

import (
	"time"

	"github.com/tfisolate/tfisolate/internal/admission"
	"github.com/tfisolate/tfisolate/internal/queue"
	"github.com/tfisolate/tfisolate/workdir"
)

// unitRecord is what a unit met on its way through the pipeline besides
// its command's outcome. Each field is written only by the step named
// beside it (the accumulating ones grow as that step meets more);
// buildResult reads them all.
type unitRecord struct {
	log          string          // openLog: the unit's log file
	instanceWait time.Duration   // runUnit: waited for the workdir's instance lock
	instanceLock *workdir.Holder // runUnit: that lock's holder, when it waited
	stateWait    time.Duration   // withStateLock: waited for state locks in all
	stateLock    *StateLock      // withStateLock: the last state lock holder met
	recovered    []StateLock     // recoverLock: state locks released as left by a crashed run
	crashedRuns  []CrashedRun    // settleCrashed: earlier runs that never finished
	retries      int             // retry: attempts repeated after transient errors
}

// stepOutcome is what a unit's command step found. A step that fails
// returns what it found before it failed.
type stepOutcome struct {
	hasChanges bool
	summary    *ChangeSummary
	plan       *PlanSummary
	outputs    map[string]OutputValue
	data       any // Handle.Record's last value
}

// pipelineOutcome is the pipeline's value: the command step's outcome
// and how the pipeline came to it.
type pipelineOutcome struct {
	cmd         stepOutcome
	unchanged   bool // WithSkipUnchanged skipped the command
	initSkipped bool // the init that counted was skipped
}

// resultParts are the values a unit's Result is built from, each given
// by the part of the runner that found it.
type resultParts struct {
	unit     string          // the unit's ID; set when the unit is queued
	done     *queue.Outcome  // the queue's verdict; nil while the unit waits
	duration time.Duration   // the unit's run under the memory gate, its retries included
	start    time.Time       // when that run began; zero until the unit starts
	cpuWait  time.Duration   // admission.Cores.Waited
	mem      admission.Use   // runMeasured
	rec      unitRecord      // the pipeline's steps (runUnit)
	out      pipelineOutcome // the pipeline (runUnit)
	// given are the outputs the Run read before the command
	// (depOutputs); a dependent's Generate or step gets them when the
	// unit's own command gave none.
	given map[string]OutputValue
}

// buildResult builds a unit's Result from what its steps returned and
// recorded, what the memory and core gates measured and the queue's
// verdict. It is the one place a Result is made or changed: the steps
// return values (or fill their own fields of unitRecord) and never write
// a Result, so each Result field has one origin, read here, a step cannot
// overwrite what another found, and a new field is added here or
// nowhere. runState calls it when a unit is queued and when it is done;
// depResults calls it for a dependent's view with given outputs.
func buildResult(p resultParts) Result {
	r := Result{
		Unit:           p.unit,
		Status:         Queued,
		Duration:       p.duration,
		Start:          p.start,
		LockWait:       p.rec.instanceWait + p.rec.stateWait,
		StateLock:      p.rec.stateLock,
		RecoveredLocks: p.rec.recovered,
		Crashed:        p.rec.crashedRuns,
		InstanceLock:   p.rec.instanceLock,
		Retries:        p.rec.retries + p.mem.Retries,
		MemoryPeak:     p.mem.Peak,
		MemoryWait:     p.mem.Wait,
		CPUWait:        p.cpuWait,
		OutOfMemory:    p.mem.OutOfMemory,
		Unchanged:      p.out.unchanged,
		InitSkipped:    p.out.initSkipped,
		HasChanges:     p.out.cmd.hasChanges,
		Summary:        p.out.cmd.summary,
		Plan:           p.out.cmd.plan,
		Outputs:        p.out.cmd.outputs,
		Data:           p.out.cmd.data,
		Log:            p.rec.log,
	}
	if r.Outputs == nil {
		r.Outputs = p.given
	}
	if p.done != nil {
		r.Status, r.Err, r.Started = outcome(*p.done)
		r.SkippedFor = p.done.SkippedFor
		if !p.start.IsZero() {
			r.End = p.start.Add(p.duration)
		}
	}
	return r
}
