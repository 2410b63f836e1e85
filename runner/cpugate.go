package runner

import (
	"context"

	"github.com/tfisolate/tfisolate/internal/admission"
)

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
