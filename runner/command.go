package runner

import "fmt"

// Command is the terraform operation Run performs on every unit.
type Command int

// Commands. Destroy visits dependents before the units they depend on.
const (
	Init Command = iota + 1
	Plan
	Apply
	Destroy
)

// String returns the terraform subcommand name.
func (c Command) String() string {
	switch c {
	case Init:
		return "init"
	case Plan:
		return "plan"
	case Apply:
		return "apply"
	case Destroy:
		return "destroy"
	}
	return fmt.Sprintf("Command(%d)", int(c))
}

func (c Command) valid() error {
	if c < Init || c > Destroy {
		return fmt.Errorf("%w: %d", ErrUnknownCommand, int(c))
	}
	return nil
}

// phase is the Phase in which the command itself runs.
func (c Command) phase() Phase {
	switch c {
	case Plan:
		return PhasePlan
	case Apply:
		return PhaseApply
	case Destroy:
		return PhaseDestroy
	}
	return PhaseInit
}
