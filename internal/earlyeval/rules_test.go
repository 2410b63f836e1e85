package earlyeval

import (
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Variables go to init and get only for an engine that evaluates them
// early: OpenTofu 1.8 and later, Terraform 1.15 and later (a prerelease
// counts as its release), each evaluating sources by its own rule
// (EvalStatic, EvalConst); to workspace select under OpenTofu only
// (Terraform refuses -var there); to validate and show of a saved plan
// under both. An engine of unknown version evaluates nothing early.
func TestRulesOf(t *testing.T) {
	eng := func(k engine.Kind, v string) engine.Info {
		return engine.Info{Kind: k, Version: version.Must(version.NewVersion(v))}
	}
	tofu := func(v string) engine.Info { return eng(engine.OpenTofu, v) }
	tf := func(v string) engine.Info { return eng(engine.Terraform, v) }
	for _, e := range []engine.Info{tofu("1.8.0"), tofu("1.10.6"), tofu("1.12.6"), tofu("1.8.0-beta1")} {
		require.Equal(t, Rules{Init: true, Workspace: true, Inspect: true, Eval: EvalStatic}, RulesOf(e), "%s", e)
	}
	for _, e := range []engine.Info{tf("1.15.0"), tf("1.15.0-alpha20260101"), tf("1.16.0")} {
		require.Equal(t, Rules{Init: true, Inspect: true, Eval: EvalConst}, RulesOf(e), "%s", e)
	}
	for _, e := range []engine.Info{tofu("1.7.3"), tf("1.11.4"), tf("1.14.9"), {Kind: engine.Terraform}, {Kind: engine.OpenTofu}} {
		require.Equal(t, Rules{}, RulesOf(e), "%s", e)
	}
}
