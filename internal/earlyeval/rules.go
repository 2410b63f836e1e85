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
}

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
		return Rules{Init: true, Workspace: true, Inspect: true}
	case e.Kind == engine.Terraform && v.GreaterThanOrEqual(terraformEarlySince):
		return Rules{Init: true, Inspect: true}
	}
	return Rules{}
}
