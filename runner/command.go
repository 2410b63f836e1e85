package runner

import (
	"context"
	"fmt"
	"regexp"
)

// Command is what Run does in every unit once its workdir is prepared,
// its providers are set up, terraform init has run and its workspace is
// selected. Commands are values: the predefined ones below run terraform
// subcommands, and Step builds one from a Go function. The zero Command
// is invalid.
type Command struct {
	name    string
	kind    commandKind
	phase   Phase
	reverse bool // dependents before the units they depend on (destroy order)
	step    func(ctx context.Context, h *Handle) error
	lockID  string     // kindForceUnlock
	bundle  bundleSpec // kindExportPlan, kindImportPlan
}

type commandKind int

const (
	kindInvalid commandKind = iota
	kindInit
	kindPlan
	kindSavePlan
	kindApply
	kindApplyPlan
	kindDestroy
	kindValidate
	kindOutput
	kindStep
	kindForceUnlock
	kindPushErroredState
	kindExportPlan
	kindImportPlan
)

// The predefined commands.
var (
	// Init runs terraform init only.
	Init = Command{name: "init", kind: kindInit, phase: PhaseInit}
	// Plan runs terraform plan; Result.HasChanges tells whether the plan
	// is not empty. Nothing is saved.
	Plan = Command{name: "plan", kind: kindPlan, phase: PhasePlan}
	// SavePlan runs terraform plan into a saved plan file kept in the
	// instance's workdir, renders it with terraform show -json into a file
	// beside it, and puts both paths and a summary in Result.Plan.
	// ApplyPlan applies exactly that plan later.
	SavePlan = Command{name: "save-plan", kind: kindSavePlan, phase: PhasePlan}
	// SaveDestroyPlan is SavePlan with -destroy; it runs in destroy order
	// (dependents first), and so does the ApplyPlan that applies it.
	SaveDestroyPlan = Command{name: "save-destroy-plan", kind: kindSavePlan, phase: PhasePlan, reverse: true}
	// Apply runs terraform apply -auto-approve; Result.Outputs holds the
	// root module's outputs afterwards.
	Apply = Command{name: "apply", kind: kindApply, phase: PhaseApply}
	// ApplyPlan applies the plan SavePlan saved for each unit, exactly:
	// a unit with no saved plan, or whose workdir, lock file, terraform,
	// Args or Env changed since it was saved, fails with ErrNoPlan or
	// ErrStalePlan and is never re-planned. Give it the same units
	// SavePlan got. The order is dependency order;
	// use ApplyDestroyPlan for plans saved by SaveDestroyPlan.
	ApplyPlan = Command{name: "apply-plan", kind: kindApplyPlan, phase: PhaseApply}
	// ApplyDestroyPlan is ApplyPlan in destroy order, for plans saved by
	// SaveDestroyPlan. A saved plan of the other kind is refused with
	// ErrStalePlan.
	ApplyDestroyPlan = Command{name: "apply-destroy-plan", kind: kindApplyPlan, phase: PhaseDestroy, reverse: true}
	// Destroy runs terraform destroy -auto-approve, dependents first.
	Destroy = Command{name: "destroy", kind: kindDestroy, phase: PhaseDestroy, reverse: true}
	// Validate runs terraform validate; the diagnostics of an invalid
	// configuration are in the unit's error.
	Validate = Command{name: "validate", kind: kindValidate, phase: PhaseValidate}
	// Output reads the root module's outputs into Result.Outputs without
	// changing anything.
	Output = Command{name: "output", kind: kindOutput, phase: PhaseOutput}
	// PushErroredState pushes, with terraform state push, the states that
	// an earlier apply changed infrastructure for but could not save
	// (ErrStateNotSaved), and then lets the instance run again. terraform
	// refuses a state of another lineage or an older serial than the
	// backend's. A unit with nothing to push succeeds.
	PushErroredState = Command{name: "push-errored-state", kind: kindPushErroredState, phase: PhaseStep}
)

// Step returns a custom command: fn runs once per unit, with a Handle on
// the unit's prepared workdir and initialized terraform, under every
// guarantee Run gives the predefined commands (queue order, parallelism,
// the instance lock, interrupts, leftover-process reaping, logs, events,
// the report). It runs in dependency order; see Reversed. The name shows
// in events, logs and the report.
func Step(name string, fn func(ctx context.Context, h *Handle) error) Command {
	return Command{name: name, kind: kindStep, phase: PhaseStep, step: fn}
}

// Reversed returns c to be run in the other order: a command that runs in
// dependency order then runs every unit after the units that depend on
// it (destroy order), and a destroy command in dependency order.
// Order shows the order a command runs in.
func (c Command) Reversed() Command {
	c.reverse = !c.reverse
	return c
}

// String returns the command's name.
func (c Command) String() string {
	if c.kind == kindInvalid {
		return "Command(invalid)"
	}
	return c.name
}

func (c Command) valid() error {
	switch {
	case c.kind == kindInvalid:
		return fmt.Errorf("%w: the zero Command", ErrUnknownCommand)
	case c.kind == kindStep && c.step == nil:
		return fmt.Errorf("%w: step %q has no function", ErrUnknownCommand, c.name)
	case c.kind == kindStep && !stepNameRe.MatchString(c.name):
		return fmt.Errorf("%w: step name %q: use letters, digits, '.', '_' and '-' (it names log files)", ErrUnknownCommand, c.name)
	case (c.kind == kindExportPlan || c.kind == kindImportPlan) && c.bundle.key != nil && len(c.bundle.key) == 0:
		// An HMAC key everyone holds authenticates nothing; an empty one
		// is what []byte(os.Getenv(NAME)) gives when the secret is unset.
		return fmt.Errorf("%w: %s(%q, key): the key is empty (is the secret that holds it unset?): give the bundles' secret key, "+
			"or nil for bundles without a MAC", ErrBadOption, map[commandKind]string{kindExportPlan: "ExportPlan", kindImportPlan: "ImportPlan"}[c.kind], c.bundle.dir)
	}
	return nil
}

var stepNameRe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)
