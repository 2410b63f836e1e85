package runner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/workdir"
)

// Early evaluation (OpenTofu 1.8, Terraform 1.15): a backend block, a
// module's source and version may be built from input variables and
// locals, evaluated at init. internal/earlyeval decides which commands
// are then given the unit's variables (earlyeval.RulesOf), digests what
// the backend and module calls read for the records, and evaluates a
// root module's dynamic module sources by the engine's own rule and with
// its functions (earlyeval.Rules.Eval, earlyeval.Functions), so that the
// workdir holds the local module each selects (moduleSources); what does
// not evaluate is left to the engine, never guessed. This file is the
// runner's side: the unit's values, and when to ask.

// earlyEvaluation reports whether engine e evaluates variables early.
func earlyEvaluation(e engine.Info) bool { return earlyeval.RulesOf(e).Init }

// configRule is the configuration-file rule of engine kind k (see
// modtree.Files): the one decision, taken from the engine that runs.
func configRule(k engine.Kind) modtree.Files {
	if k == engine.OpenTofu {
		return modtree.TofuFiles
	}
	return modtree.TerraformFiles
}

// ruleEngine is the engine kind that reads configuration files by rule:
// configRule's inverse.
func ruleEngine(rule modtree.Files) engine.Kind {
	if rule == modtree.TofuFiles {
		return engine.OpenTofu
	}
	return engine.Terraform
}

// workdirEngine is the workdir.Engine of engine kind k.
func workdirEngine(k engine.Kind) workdir.Engine {
	if k == engine.OpenTofu {
		return workdir.OpenTofu
	}
	return workdir.Terraform
}

// forEngine returns a copy of units set up for engine e: each workdir
// spec names the engine (so the workdir follows its configuration
// files), and with early evaluation the units' variables go to init and
// get too. The caller's units are not changed.
func forEngine(units []Unit, e engine.Info) []Unit {
	out := slices.Clone(units)
	for i := range out {
		out[i].Workdir.Engine = workdirEngine(e.Kind)
		out[i].Args.early = earlyeval.RulesOf(e)
	}
	return out
}

// earlyGiven is what Args and the environment env give the root
// module's variables.
func earlyGiven(a Args, env map[string]string) earlyeval.Given {
	return earlyeval.Given{Vars: a.Vars, VarFiles: a.VarFiles, Env: env}
}

// newEarlyInputs reads what early evaluation reads in the root module
// whose files readRootConfig read: env is the unit's environment
// (TF_VAR_*), dir the directory terraform runs in (its terraform.tfvars,
// *.auto.tfvars and relative var files).
func newEarlyInputs(files []modtree.ConfigFile, dir string, a Args, env map[string]string) *earlyeval.Inputs {
	return earlyeval.New(files, dir, nil, earlyGiven(a, env))
}

// moduleSources sets spec.ModuleSources, where the engine evaluates
// module sources early and the caller set none, to the values the
// unit's variables give the component's dynamic module sources by the
// engine's rule (earlyeval.Inputs.ModuleSources: the unit's Args, its
// TF_VAR_* and the process's, the component's and the generated
// variable files), so that the workdir holds the local module each
// selects. Where one cannot be evaluated, x.unknown says where and why
// (noted in the unit's log once it is open), and it is left to the
// engine: when what is known of it starts with a local path outside the
// component, the directory that path names is materialized too
// (earlyeval.Inputs.SourceDirs; within the workdir's budget, as any
// source), so that the engine finds the module it evaluates the source
// to, as plain terraform does in the repository. x.sources, which the
// module walk follows, keeps only the evaluated values: a source left to
// the engine stays one the engine resolves (terraform get).
func (x *unitRun) moduleSources(spec *workdir.Spec) {
	if !x.u.Args.early.Init || spec.ModuleSources != nil || !x.rs.hasDynamicSources(spec.Source) {
		x.sources = spec.ModuleSources
		return
	}
	e, err := sourceEarlyInputs(spec.Source, spec.Files, configRule(x.rs.eng.Kind), x.u)
	if err != nil {
		return // the workdir refuses the source by name
	}
	values, unknown := e.ModuleSources(x.u.Args.early)
	x.sources, x.unknown = values, unknown
	dirs := e.SourceDirs(x.u.Args.early, values)
	if len(dirs) == 0 {
		spec.ModuleSources = values
		return
	}
	spec.ModuleSources = maps.Clone(values)
	if spec.ModuleSources == nil {
		spec.ModuleSources = map[string]string{}
	}
	for n, d := range dirs {
		spec.ModuleSources[n] = d
		x.reached = append(x.reached, fmt.Sprintf("module %q: %s", n, d))
	}
	slices.Sort(x.reached)
}

// sourceEarlyInputs reads what early evaluation reads in the component
// source dir, before any workdir exists: its configuration files by rule,
// files (Spec.Files, generated) beside or in place of its own, and the
// values unit u gives its variables (its Args and Env, the process's
// TF_VAR_*).
func sourceEarlyInputs(dir string, files map[string][]byte, rule modtree.Files, u *Unit) (*earlyeval.Inputs, error) {
	return earlyeval.FromSource(dir, files, rule, earlyGiven(u.Args, unitEnv(processEnv(), nil, "", u.Env)))
}

// hasDynamicSources reports whether the root module at src calls a module
// whose source is an expression, walking it once per Run.
func (rs *runState) hasDynamicSources(src string) bool {
	if v, ok := rs.dynamic.Load(src); ok {
		return v.(bool)
	}
	has := earlyeval.HasDynamicSources(src, configRule(rs.eng.Kind))
	rs.dynamic.Store(src, has)
	return has
}

// walk walks the unit's module tree in its workdir, following the local
// modules its evaluated dynamic sources select, and notes in the unit's
// log each dynamic source that could not be evaluated.
func (x *unitRun) walk() {
	x.tree = modtree.WalkWith(x.dir, configRule(x.rs.eng.Kind), x.sources)
	for _, u := range x.unknown {
		x.out.note("modules: not evaluated, left to the engine: " + u)
	}
	for _, r := range x.reached {
		x.out.note("modules: the directory a source left to the engine reaches is in the workdir, for the engine to find its module in: " + r)
	}
}
