package runner

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// A unit's Args mapped onto the options of the terraform commands the
// runner runs (internal/tfcmd builds the argument lists from them).

// vars are the unit's variables as plan, apply and destroy get them.
func (a Args) vars() tfcmd.Vars { return tfcmd.Vars{Files: a.VarFiles, Values: a.Vars} }

// earlyVars are the variables a command besides plan, apply and destroy
// is given: the unit's own where the engine's rules (earlyeval.Rules) say the
// command reads them (given), none otherwise.
func (a Args) earlyVars(given bool) tfcmd.Vars {
	if !given {
		return tfcmd.Vars{}
	}
	return a.vars()
}

// change is what plan, apply and destroy take alike.
func (a Args) change(lockTimeout string) tfcmd.Change {
	return tfcmd.Change{LockTimeout: lockTimeout, Lock: a.Lock, Refresh: a.Refresh, Parallelism: a.Parallelism, Targets: a.Targets, Vars: a.vars()}
}

// initCmd is the unit's init; backendChanged: the backend configuration
// changed since the last successful init.
func (a Args) initCmd(backendChanged bool) tfcmd.Cmd {
	return tfcmd.Init(tfcmd.InitOptions{BackendConfig: a.BackendConfig, BackendChanged: backendChanged,
		MigrateState: a.MigrateState, Reconfigure: a.Reconfigure, Upgrade: a.Upgrade, Vars: a.earlyVars(a.early.Init)})
}

// getCmd fetches the module calls' modules (update: the newest versions
// the constraints allow).
func (a Args) getCmd(update bool) tfcmd.Cmd {
	return tfcmd.Get(tfcmd.GetOptions{Update: update, Vars: a.earlyVars(a.early.Init)})
}

// workspaceCmd selects workspace name, creating it when missing.
func (a Args) workspaceCmd(name string) tfcmd.Cmd {
	return tfcmd.WorkspaceSelect(tfcmd.WorkspaceSelectOptions{Name: name, Vars: a.earlyVars(a.early.Workspace)})
}

// showPlanCmd is show -json of the saved plan planFile.
func (a Args) showPlanCmd(planFile string) tfcmd.Cmd {
	return tfcmd.ShowPlan(tfcmd.ShowPlanOptions{PlanFile: planFile, Vars: a.earlyVars(a.early.Inspect)})
}

// validateCmd is the unit's validate.
func (a Args) validateCmd() tfcmd.Cmd {
	return tfcmd.Validate(tfcmd.ValidateOptions{Vars: a.earlyVars(a.early.Inspect)})
}

// planCmd is the unit's plan (destroy: -destroy; out: -out, "" for none).
func (a Args) planCmd(lockTimeout string, destroy bool, out string) tfcmd.Cmd {
	return tfcmd.Plan(tfcmd.PlanOptions{Change: a.change(lockTimeout), Replace: a.Replace, Destroy: destroy, Out: out})
}

func (a Args) applyCmd(lockTimeout string) tfcmd.Cmd {
	return tfcmd.Apply(tfcmd.ApplyOptions{Change: a.change(lockTimeout), Replace: a.Replace})
}

// applyPlanCmd applies a saved plan: variables, targets and replacements
// are in the plan.
func (a Args) applyPlanCmd(lockTimeout, planFile string) tfcmd.Cmd {
	return tfcmd.ApplyPlan(tfcmd.ApplyPlanOptions{LockTimeout: lockTimeout, Lock: a.Lock, Parallelism: a.Parallelism, PlanFile: planFile})
}

func (a Args) destroyCmd(lockTimeout string) tfcmd.Cmd {
	return tfcmd.Destroy(tfcmd.DestroyOptions{Change: a.change(lockTimeout)})
}

// checkArgs refuses arguments terraform would misread: values that look
// like flags and var files or backend files that do not exist are caught
// by terraform itself with a clear message; what is checked here is what
// terraform would take silently the wrong way.
func checkArgs(id string, a Args) error {
	for k := range a.Vars {
		if k == "" {
			return fmt.Errorf("%w: unit %s: a -var with an empty name", ErrInvalidUnit, id)
		}
		if strings.ContainsAny(k, "= \t\n") {
			return fmt.Errorf("%w: unit %s: -var name %q has '=' or white space in it", ErrInvalidUnit, id, k)
		}
	}
	for _, f := range a.VarFiles {
		if f == "" || filepath.Clean(f) == "." {
			return fmt.Errorf("%w: unit %s: empty -var-file path", ErrInvalidUnit, id)
		}
	}
	for _, list := range [][]string{a.Targets, a.Replace, a.BackendConfig} {
		for _, s := range list {
			if s == "" {
				return fmt.Errorf("%w: unit %s: an empty -target, -replace or -backend-config value", ErrInvalidUnit, id)
			}
		}
	}
	if a.Parallelism < 0 {
		return fmt.Errorf("%w: unit %s: -parallelism %d", ErrInvalidUnit, id, a.Parallelism)
	}
	return nil
}
