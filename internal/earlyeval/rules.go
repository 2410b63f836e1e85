package earlyeval

import (
	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Rules is what an engine evaluates from the unit's variables before
// plan, and so which commands besides plan, apply and destroy are given
// them. RulesOf decides it, from the engine's kind and version, in this
// one place. The zero Rules is an engine that evaluates nothing early.
type Rules struct {
	// Init: module sources and versions and the backend may read
	// variables; init and get take -var and -var-file.
	Init bool
	// Workspace: workspace select takes them too (OpenTofu); Terraform
	// refuses -var there.
	Workspace bool
	// Inspect: validate, and show of a saved plan, load the
	// configuration with its module sources and are given them
	// (Terraform 1.15 checks the sources against the installed modules:
	// "Module source has changed" without them).
	Inspect bool
	// Eval is how the engine evaluates a module source at init, and so
	// how ModuleSources does: which variables it may read and which
	// functions it has (see Functions).
	Eval Evaluation
}

// Evaluation is an engine's rule for evaluating a module source at init.
type Evaluation string

// The evaluation rules, by engine.
const (
	// EvalNone: the engine evaluates no module source (a source must be
	// a literal).
	EvalNone Evaluation = ""
	// EvalConst is Terraform's (1.15 and later): literals, const
	// variables (`const = true`) and the locals and path.module and
	// path.root built from them; any other variable is unknown at init,
	// and a source that reads one is refused ("Only literal values and
	// const variables can be evaluated during init").
	EvalConst Evaluation = "terraform-const"
	// EvalStatic is OpenTofu's (1.8 and later) static evaluation: every
	// variable, the locals built from them, path.module and path.root;
	// a source derived from a sensitive (or ephemeral) variable is
	// refused ("Sensitive value not allowed").
	EvalStatic Evaluation = "tofu-static"
)

// Where early evaluation starts: the first OpenTofu and Terraform
// versions that evaluate variables in backend blocks and module sources
// and take -var and -var-file at init and get.
var (
	tofuEarlySince      = version.Must(version.NewVersion("1.8.0"))
	terraformEarlySince = version.Must(version.NewVersion("1.15.0"))
)

// RulesOf returns engine e's rules; a prerelease counts as its release
// (1.15.0-beta1 has what 1.15.0 has), an unknown version has none.
func RulesOf(e engine.Info) Rules {
	if e.Version == nil {
		return Rules{}
	}
	v := e.Version.Core()
	switch {
	case e.Kind == engine.OpenTofu && v.GreaterThanOrEqual(tofuEarlySince):
		return Rules{Init: true, Workspace: true, Inspect: true, Eval: EvalStatic}
	case e.Kind == engine.Terraform && v.GreaterThanOrEqual(terraformEarlySince):
		return Rules{Init: true, Inspect: true, Eval: EvalConst}
	}
	return Rules{}
}

// NewestRules are the rules of the newest releases of engine kind k, for
// a caller that has no engine to ask (Affected reads a component under
// both kinds' rules).
func NewestRules(k engine.Kind) Rules {
	if k == engine.OpenTofu {
		return RulesOf(engine.Info{Kind: k, Version: tofuEarlySince})
	}
	return RulesOf(engine.Info{Kind: k, Version: terraformEarlySince})
}
