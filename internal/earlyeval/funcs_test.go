package earlyeval

import (
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Functions, per engine kind and version: an engine that evaluates
// sources at init (Terraform 1.15 and 1.16, OpenTofu 1.10 and 1.12) has
// the pure string, collection and encoding functions, under their names
// and core:: names, and they compute what the engine's do (replace with
// a regular expression, coalesce skipping an empty string, lookup with a
// default); an engine that evaluates nothing early (Terraform 1.11) has
// none. An impure function, a filesystem one, try and can, and one the
// engine lacks (urldecode is OpenTofu's only, convert Terraform's only)
// are never in the table: a source calling one never evaluates.
func TestFunctions(t *testing.T) {
	eng := func(k engine.Kind, v string) engine.Info {
		return engine.Info{Kind: k, Version: version.Must(version.NewVersion(v))}
	}
	eval := func(fns map[string]function.Function, src string) (cty.Value, bool) {
		x, diags := hclsyntax.ParseExpression([]byte(src), "", hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%s: %s", src, diags)
		v, diags := x.Value(&hcl.EvalContext{Functions: fns})
		return v, !diags.HasErrors() && v.IsWhollyKnown()
	}
	for _, e := range []engine.Info{eng(engine.Terraform, "1.15.0"), eng(engine.Terraform, "1.16.0"), eng(engine.OpenTofu, "1.10.6"), eng(engine.OpenTofu, "1.12.6")} {
		fns := Functions(RulesOf(e))
		require.NotEmpty(t, fns, "%s", e)
		for src, want := range map[string]string{
			`lower("NET")`:                            "net",
			`core::upper("net")`:                      "NET",
			`format("%s-%03d", "net", 7)`:             "net-007",
			`join("/", ["..", "modules", "net"])`:     "../modules/net",
			`replace("a-b-c", "-", "/")`:              "a/b/c",
			`replace("net-v12", "/-v(\\d+)$/", "$1")`: "net12",
			`trimprefix("env-prod", "env-")`:          "prod",
			`trimsuffix("net.git", ".git")`:           "net",
			`split("/", "a/b")[1]`:                    "b",
			`element(["a", "b"], 3)`:                  "b",
			`lookup({a = "x"}, "a")`:                  "x",
			`lookup({a = "x"}, "b", "dflt")`:          "dflt",
			`coalesce("", null, "first")`:             "first",
			`jsonencode({a = 1})`:                     `{"a":1}`,
		} {
			v, ok := eval(fns, src)
			require.True(t, ok, "%s under %s", src, e)
			require.Equal(t, want, v.AsString(), "%s under %s", src, e)
		}
		for _, src := range []string{
			`coalesce("", null)`, `lookup({a = "x"}, "b")`, `replace("a", "/(/", "b")`,
		} {
			_, ok := eval(fns, src)
			require.False(t, ok, "%s is an error under %s, as in the engine", src, e)
		}
		for _, name := range []string{
			"timestamp", "plantimestamp", "uuid", "bcrypt", "file", "fileexists", "fileset", "templatefile",
			"filemd5", "try", "can", "urldecode", "convert", "core::timestamp", "core::file",
		} {
			require.NotContains(t, fns, name, "%s under %s", name, e)
		}
	}
	for _, e := range []engine.Info{eng(engine.Terraform, "1.11.4"), eng(engine.Terraform, "1.14.9"), eng(engine.OpenTofu, "1.7.3"), {Kind: engine.Terraform}} {
		require.Nil(t, Functions(RulesOf(e)), "%s evaluates nothing at init", e)
	}
}
