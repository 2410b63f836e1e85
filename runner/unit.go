package runner

import (
	"context"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/workdir"
)

// Unit is one root-module instance to run.
type Unit struct {
	// ID names the unit in DependsOn, filters, events and the report.
	// Empty means Workdir.Stack + "/" + Workdir.Instance. It must be
	// valid UTF-8 with no control character (newline, escape, ...) or
	// line separator: it prefixes every line of the combined output.
	ID string
	// Workdir says what to prepare: stack, instance, component source and
	// generated files.
	Workdir workdir.Spec
	// Workspace is selected (created if missing) before the command
	// runs. Empty means terraform's "default", whatever workspace an
	// earlier run of the instance selected.
	Workspace string
	// DependsOn lists the IDs of units that must be applied before this
	// one (and destroyed after it).
	DependsOn []string
	// Env is added to terraform's environment for this unit only, over
	// the process environment (AWS_PROFILE per stack, TF_VAR_x, ...).
	// Run refuses (ErrInvalidUnit, naming the unit and the key) an empty
	// key, a key with '=' or NUL, and a value with NUL.
	Env map[string]string
	// Args are the terraform arguments of this unit.
	Args Args
	// ExpectedMemory, when > 0, is the host's estimate of this unit's peak
	// resident memory in bytes, terraform and its providers together
	// (a unit whose environment makes it heavier than its component's
	// other instances: a larger state, a bigger region). The memory
	// budget (WithMemoryBudget) admits the unit as needing at least this
	// much: a larger peak measured for its component and command still
	// counts, since a hint never lowers what was measured; for a
	// component never measured it replaces the default guess, so the
	// unit needs no first measuring run. Negative is refused
	// (ErrInvalidUnit). It steers admission only; the record of measured
	// peaks keeps measurements alone.
	ExpectedMemory int64
	// Generate, if set, is called right before the unit starts, with the
	// results of the units it depends on, by ID, their outputs included
	// in every command: after Apply, ApplyPlan and Output in dependency
	// order, a dependency's own Result (a dependency skipped as unchanged
	// reads its outputs); for the other commands (Plan, SavePlan,
	// Destroy, the destroy-plan forms, Validate, Init, and any command
	// with WithIgnoreDependencyOrder) the Run first reads the outputs of
	// the units Generates depend on, with an Output pass before the
	// command starts. Custom steps in dependency order get their
	// dependencies' step results. The files it returns are generated into
	// the workdir on top of Workdir.Files. An error fails the unit before
	// anything runs.
	//
	// A dependency whose outputs are not known is never given as an empty
	// map: when its state holds none of the outputs its configuration
	// declares (it has never been applied), a dependency outside the
	// Run's selection, and under Plan and SavePlan a dependency planned
	// in the same Run, fail the unit with ErrNotApplied naming the
	// dependency, before Generate is called. Apply the dependency first
	// (Apply, or ApplyPlan of its saved plan), then plan the unit.
	Generate func(ctx context.Context, deps map[string]Result) (map[string][]byte, error)
}

// Args are per-unit terraform arguments. Each is passed to the commands
// that take it; none is passed to a command that would refuse it (a saved
// plan is applied with no variables or targets: they are in the plan).
type Args struct {
	// Vars are -var NAME=VALUE pairs, passed in sorted order after the
	// var files, so a Var wins over a var file's value for the same
	// variable.
	Vars map[string]string
	// VarFiles are -var-file paths, relative to the component directory
	// in the workdir (a generated file or one of the component's own) or
	// absolute, passed in order (a later file wins).
	VarFiles []string
	// Targets are -target resource addresses.
	Targets []string
	// Replace are -replace resource addresses (plan and apply).
	Replace []string
	// Refresh, when set, is passed as -refresh=true or -refresh=false.
	Refresh *bool
	// Parallelism, when > 0, is terraform's -parallelism.
	Parallelism int
	// Lock, when set, is passed as -lock=true or -lock=false.
	Lock *bool
	// BackendConfig are init -backend-config values: files (relative to
	// the component directory, or absolute) or KEY=VALUE pairs.
	BackendConfig []string
	// Reconfigure passes init -reconfigure: a changed backend is taken
	// as is, and the state of the old one is left where it is. It does
	// not force init: init runs, with -reconfigure, only when the backend
	// configuration or anything else init depends on changed since the
	// instance's last successful init (or there is no record of one), so
	// a host that sets it on every command (atmos's
	// init_run_reconfigure) pays no init per unit per command.
	Reconfigure bool
	// MigrateState passes init -migrate-state -force-copy when the backend
	// changed: state moves to the new backend.
	//
	// Without one of the two, a backend configuration that changed since
	// the instance's last init (a moved key, a renamed bucket, a backend
	// added or removed) is refused with a *BackendChangedError, as plain
	// terraform stops and asks, unless the old state provably holds no
	// resources (a local state with none; a remote one cannot be read
	// without its old configuration, so it always counts).
	MigrateState bool
	// Upgrade passes init -upgrade and re-resolves provider versions in
	// the shared cache, ignoring the versions in the lock file. Remote
	// modules are fetched afresh (get -update) and replace the module
	// store's set, so the component's other instances get them too.
	Upgrade bool

	// early says which commands besides plan, apply and destroy get Vars
	// and VarFiles: set by Run for the engine that runs (earlyeval.RulesOf;
	// see forEngine).
	early earlyeval.Rules
}

func (u *Unit) id() string {
	if u.ID != "" {
		return u.ID
	}
	if u.Workdir.Stack == "" && u.Workdir.Instance == "" {
		return ""
	}
	return u.Workdir.Stack + "/" + u.Workdir.Instance
}
