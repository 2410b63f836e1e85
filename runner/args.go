package runner

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Argument building for the terraform commands the runner runs. Each
// function returns the full argument list; none runs anything, so the
// rules are tested without terraform.

func initArgs(a Args, reconfigure bool) []string {
	args := []string{"init", "-input=false", "-no-color"}
	for _, bc := range a.BackendConfig {
		args = append(args, "-backend-config="+bc)
	}
	switch {
	case a.MigrateState && reconfigure:
		args = append(args, "-migrate-state", "-force-copy")
	case a.Reconfigure || reconfigure:
		args = append(args, "-reconfigure")
	}
	if a.Upgrade {
		args = append(args, "-upgrade")
	}
	return append(args, earlyVarArgs(a)...)
}

// earlyVarArgs are the variables init, get and workspace select are
// given: the unit's own (varArgs) for an engine that evaluates variables
// early (a backend or module source built from them), none otherwise.
func earlyVarArgs(a Args) []string {
	if !a.initVars {
		return nil
	}
	return varArgs(a)
}

// getArgs fetch the module calls' modules (with update: the newest
// versions the constraints allow).
func getArgs(a Args, update bool) []string {
	args := []string{"get", "-no-color"}
	if update {
		args = append(args, "-update")
	}
	return append(args, earlyVarArgs(a)...)
}

// varArgs puts var files first and -var pairs after them: terraform takes
// the last value it is given, so an explicit Var wins over a var file.
func varArgs(a Args) []string {
	var args []string
	for _, f := range a.VarFiles {
		args = append(args, "-var-file="+f)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Vars)) {
		args = append(args, "-var", k+"="+a.Vars[k])
	}
	return args
}

func changeArgs(a Args, lockTimeout string) []string {
	args := []string{"-input=false", "-lock-timeout=" + lockTimeout}
	if a.Lock != nil {
		args = append(args, "-lock="+strconv.FormatBool(*a.Lock))
	}
	if a.Refresh != nil {
		args = append(args, "-refresh="+strconv.FormatBool(*a.Refresh))
	}
	if a.Parallelism > 0 {
		args = append(args, "-parallelism="+strconv.Itoa(a.Parallelism))
	}
	for _, t := range a.Targets {
		args = append(args, "-target="+t)
	}
	return append(args, varArgs(a)...)
}

func planArgs(a Args, lockTimeout string, destroy bool, out string) []string {
	args := []string{"plan", "-json", "-detailed-exitcode"}
	args = append(args, changeArgs(a, lockTimeout)...)
	for _, r := range a.Replace {
		args = append(args, "-replace="+r)
	}
	if destroy {
		args = append(args, "-destroy")
	}
	if out != "" {
		args = append(args, "-out="+out)
	}
	return args
}

func applyArgs(a Args, lockTimeout string) []string {
	args := []string{"apply", "-auto-approve", "-json"}
	args = append(args, changeArgs(a, lockTimeout)...)
	for _, r := range a.Replace {
		args = append(args, "-replace="+r)
	}
	return args
}

// applyPlanArgs apply a saved plan: variables, targets and replacements
// are in the plan, and terraform refuses them beside it.
func applyPlanArgs(a Args, lockTimeout, planFile string) []string {
	args := []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=" + lockTimeout}
	if a.Lock != nil {
		args = append(args, "-lock="+strconv.FormatBool(*a.Lock))
	}
	if a.Parallelism > 0 {
		args = append(args, "-parallelism="+strconv.Itoa(a.Parallelism))
	}
	return append(args, planFile)
}

func destroyArgs(a Args, lockTimeout string) []string {
	args := []string{"destroy", "-auto-approve", "-json"}
	return append(args, changeArgs(a, lockTimeout)...)
}

func validateArgs() []string { return []string{"validate", "-no-color"} }

func statePushArgs(lockTimeout, file string) []string {
	return []string{"state", "push", "-lock-timeout=" + lockTimeout, file}
}

func outputArgs() []string { return []string{"output", "-json"} }

func showPlanArgs(planFile string) []string { return []string{"show", "-json", "-no-color", planFile} }

// workspaceArgs and forceUnlockArgs put "--" before the name and the ID:
// without it terraform and tofu read a name such as "-h" as a flag (print
// help, exit 0) and the unit would run in another workspace.
func workspaceArgs(name string, a Args) []string {
	return append(append([]string{"workspace", "select", "-or-create=true"}, earlyVarArgs(a)...), "--", name)
}

func forceUnlockArgs(id string) []string {
	return []string{"force-unlock", "-force", "-no-color", "--", id}
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
