package runner

import (
	"context"
	"io"
	"maps"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfisolate/tfisolate/workdir"
)

// Handle is what a custom step (see Step) gets for one unit: everything
// the runner prepared, under the instance lock, for the step's duration
// only. A Handle must not be kept after the step returns: its Exec is
// refused then (ErrHandleDone).
type Handle struct {
	// Unit is the unit being run.
	Unit Unit
	// ID is the unit's ID.
	ID string
	// Workdir is the prepared instance workdir; run terraform in
	// Workdir.Dir.
	Workdir *workdir.Workdir
	// Terraform is an initialized terraform for the workdir, with the
	// unit's environment (less what terraform-exec refuses, see below).
	// Its stderr goes to the unit's log; its stdout is never echoed
	// anywhere (show and output print sensitive values in
	// clear): what a subcommand returns is the step's. Any subcommand
	// terraform-exec offers works on it. terraform-exec refuses TF_VAR_*,
	// TF_LOG* and TF_CLI_ARGS* in the environment it is given, so those
	// are left out of it: pass the unit's variables with VarOptions, or
	// run the subcommand with Exec, which gets the unit's whole
	// environment and runs any subcommand (state list, state show).
	Terraform *tfexec.Terraform
	// Log writes whole lines to the unit's log and to the combined
	// output stream.
	Log io.Writer

	x    *unitRun
	deps map[string]Result
	data any // Record's last value: the step's outcome, read once it returned

	// alive ends when the step returns: an Exec still running is
	// interrupted, and done (under mu, which each Exec holds) refuses the
	// next one.
	alive context.Context
	end   context.CancelFunc
	mu    sync.Mutex
	done  bool
}

// newHandle is the Handle of x's step; call close when the step returned.
func newHandle(x *unitRun, tf *tfexec.Terraform, log io.Writer) *Handle {
	h := &Handle{Unit: *x.u, ID: x.id, Workdir: x.w, Terraform: tf, Log: log, x: x, deps: x.rs.depResults(x.idx)}
	h.alive, h.end = context.WithCancel(context.Background())
	return h
}

// close interrupts an Exec a step left running and waits for it to end;
// every later Exec is refused.
func (h *Handle) close() {
	h.end()
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
}

// Dependencies returns the results of the units this unit depends on,
// by ID (outputs included after Apply, ApplyPlan or Output). Units not
// selected in this Run are absent.
func (h *Handle) Dependencies() map[string]Result { return maps.Clone(h.deps) }

// WithStateLock runs fn with the runner's state-lock patience: fn gets
// the -lock-timeout value for its attempt (pass it as tfexec.LockTimeout)
// and is repeated while it fails on a state lock held by someone else,
// until WithLockTimeout is spent; the wait and the holder go into the
// unit's Result. what names the operation in the log and the error.
func (h *Handle) WithStateLock(ctx context.Context, what string, fn func(lockTimeout string) error) error {
	return h.x.withStateLock(ctx, what, fn)
}

// Record stores v in the unit's Result.Data (the last call wins), for
// host tools that want a step's findings in the report. v should be
// JSON-marshalable.
func (h *Handle) Record(v any) { h.data = v }
