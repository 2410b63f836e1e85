package runner

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfisolate/tfisolate/internal/lockinfo"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// ExecError is a terraform subcommand run by Handle.Exec that failed:
// it exited with a code other than 0, or did not run or finish (then
// ExitCode is 0 and errors.Is sees the cause, a context error included).
// Its message leads with terraform's first error diagnostic, as the
// runner's own commands' errors do; it never holds the arguments after
// the subcommand (a -var may be a secret).
type ExecError struct {
	// ExitCode is terraform's exit code, 0 when it did not exit by itself.
	ExitCode int
	err      *tfcmd.Error
}

func (e *ExecError) Error() string { return e.err.Error() }

// Unwrap returns the cause of a terraform that did not run or finish
// (the context's error after an interrupt), nil otherwise.
func (e *ExecError) Unwrap() error { return e.err.Unwrap() }

// Exec runs the unit's engine (terraform, or tofu with WithOpenTofu) with
// args (the subcommand first: "state", "list"), exactly as the runner
// runs its own commands: in the workdir, with the unit's whole
// environment (TF_DATA_DIR, the runner's CLI config with the user's
// merged in, TF_VAR_*, TF_LOG* and TF_CLI_ARGS* of the process and of
// Unit.Env, the unit's temp dir), stdin the null device (a prompt fails
// at once), interrupted (then killed after the grace period) when ctx
// ends, by a Stop, or when this process dies, and recorded in the
// instance's journal like every engine the runner starts. Nothing is added to args: give h.VarArgs() to the
// subcommands that take variables.
//
// stdout is returned and never echoed anywhere (state show and output
// print sensitive values in clear); stderr goes to the unit's log, as the
// runner's own commands' does. A non-zero exit is an *ExecError, and what
// terraform printed on stdout is returned with it (plan
// -detailed-exitcode exits 2 with changes). Calls on one Handle run one
// at a time; after the step has returned, Exec is refused with
// ErrHandleDone, and an Exec still running then is interrupted.
func (h *Handle) Exec(ctx context.Context, args ...string) ([]byte, error) {
	if h == nil || h.x == nil {
		return nil, fmt.Errorf("%w: not a Handle a step got from the runner", ErrHandleDone)
	}
	if len(args) == 0 {
		return nil, errors.New("exec: no terraform subcommand given")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil, fmt.Errorf("%w: exec %s after step %s of unit %s returned", ErrHandleDone, args[0], h.x.rs.cmd, h.ID)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(h.alive, func() { cancel(ErrHandleDone) })
	defer stop()
	c := tfcmd.Raw(args...)
	c.LogFailure = func(err error) bool { return !lockinfo.IsLocked(err) }
	r, err := h.x.tf.Run(ctx, c)
	out := r.Stdout
	var te *tfcmd.Error
	if errors.As(err, &te) {
		err = &ExecError{ExitCode: te.ExitCode, err: te}
	}
	if err != nil && errors.Is(context.Cause(ctx), ErrHandleDone) {
		err = fmt.Errorf("%w: interrupted when step %s of unit %s returned: %w", ErrHandleDone, h.x.rs.cmd, h.ID, err)
	}
	return out, err
}

// VarArgs returns the unit's variables as the runner gives them to plan,
// apply and destroy: a -var-file=PATH for each of Args.VarFiles (paths
// relative to the directory terraform runs in, as the runner passes
// them), then "-var", "NAME=VALUE" for each of Args.Vars by name, so that
// a var wins over a var file as it does in the runner's commands. Add
// them to Exec's arguments after the subcommand. TF_VAR_* need nothing:
// Exec's environment has them. The values may be secrets; never log them.
func (h *Handle) VarArgs() []string { return h.Unit.Args.vars().Args() }

// VarOptions returns the unit's variables (see Handle.VarArgs) as
// terraform-exec options of type O, for a step's calls on h.Terraform:
// tfexec.PlanOption, ApplyOption, DestroyOption, RefreshCmdOption or
// ImportOption, e.g.
//
//	opts, err := runner.VarOptions[tfexec.PlanOption](h)
//	changed, err := h.Terraform.Plan(ctx, opts...)
//
// An O that terraform-exec's var options do not implement is refused
// with an error naming it. h.Terraform gets no TF_VAR_* (terraform-exec
// refuses them in its environment): a step that needs a unit's TF_VAR_*
// runs the subcommand with Exec.
func VarOptions[O any](h *Handle) ([]O, error) {
	a := h.Unit.Args
	var opts []O
	add := func(opt any) error {
		o, ok := opt.(O)
		if !ok {
			return fmt.Errorf("runner.VarOptions: %T is not a %s", opt, reflect.TypeFor[O]())
		}
		opts = append(opts, o)
		return nil
	}
	for _, f := range a.VarFiles {
		if err := add(tfexec.VarFile(f)); err != nil {
			return nil, err
		}
	}
	vars := tfcmd.Vars{Values: a.Vars}.Args()
	for i := 1; i < len(vars); i += 2 {
		if err := add(tfexec.Var(vars[i])); err != nil {
			return nil, err
		}
	}
	return opts, nil
}
