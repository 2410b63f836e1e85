package earlyeval

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// functionSamples call every function of the table (at least once each;
// TestFunctionsLikeEngine checks) with arguments a module source might
// see.
var functionSamples = []string{
	`abs(-3)`, `ceil(1.2)`, `chomp("a\n")`, `chunklist(["a", "b", "c"], 2)`, `coalescelist([], ["x"])`,
	`compact(["a", "", "b"])`, `concat(["a"], ["b"])`, `csvdecode("a,b\n1,2\n")`, `distinct(["a", "a", "b"])`,
	`element(["a", "b"], 3)`, `element(["a", "b"], -1)`, `flatten([["a"], ["b", ["c"]]])`, `floor(1.8)`,
	`format("%s-%03d", "net", 7)`, `format("%q", "x")`, `formatdate("YYYY-MM-DD hh:mm", "2024-01-02T03:04:05Z")`,
	`formatlist("%s!", ["a", "b"])`, `indent(2, "a\nb")`, `join("/", ["..", "modules", "net"])`,
	`jsondecode("{\"a\":[1,2]}")`, `jsonencode({a = 1, b = ["x"]})`, `keys({b = 1, a = 2})`, `log(8, 2)`,
	`lower("NET")`, `max(1, 5, 3)`, `min(1, 5, 3)`, `parseint("ff", 16)`, `pow(2, 10)`, `range(3)`,
	`regex("n(e)t", "net")`, `regexall("a", "banana")`, `reverse(["a", "b"])`, `setintersection(["a", "b"], ["b"])`,
	`setproduct(["a"], ["b", "c"])`, `setsubtract(["a", "b"], ["b"])`, `setunion(["a"], ["b"])`, `signum(-2)`,
	`slice(["a", "b", "c"], 1, 3)`, `sort(["b", "a"])`, `split("/", "a/b")`, `strrev("abc")`, `substr("hello", 1, 3)`,
	`timeadd("2024-01-01T00:00:00Z", "1h")`, `title("hello world")`, `trim("xxaxx", "x")`,
	`trimprefix("env-prod", "env-")`, `trimspace("  a ")`, `trimsuffix("net.git", ".git")`, `upper("net")`,
	`values({a = "x", b = "y"})`, `zipmap(["a", "b"], ["x", "y"])`,
	`replace("a-b-c", "-", "/")`, `replace("net-v12", "/-v(\\d+)$/", "$1")`, `replace("aaa", "/a/", "b")`,
	`lookup({a = "x"}, "a")`, `lookup({a = "x"}, "b", "dflt")`, `lookup({a = {b = "c"}}, "a")`,
	`coalesce("", "x")`, `coalesce(null, "", "y")`, `coalesce(1, 2)`, `coalesce("", 3)`,
	`core::lower("CORE")`, `trimspace(file("which.txt"))`, `core::file("${path.module}/which.txt")`, `lower("ÉTÉ")`, `upper("straße")`, `title("été")`,
}

// TestFunctionsLikeEngine evaluates every function of the table, under
// every engine of the matrix that evaluates sources (and Terraform
// 1.15), the way ModuleSources does and with the plain engine's own
// `console` on the same expressions, and requires the same value for
// each (compared as the engine's jsonencode of it): a function here
// computes what the engine's does.
func TestFunctionsLikeEngine(t *testing.T) {
	run := func(t *testing.T, e testenv.Engine) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		info, err := engine.Detect(ctx, e.Path)
		require.NoError(t, err)
		if Functions(RulesOf(info)) == nil {
			t.Skipf("skipping: %s evaluates no module source", info)
		}
		// The console runs in dir, as the engine runs in the component.
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "which.txt"), []byte("net\n"), 0o644))
		fns := (&Inputs{dir: dir}).functions(RulesOf(info))
		called := map[string]bool{}
		for _, src := range functionSamples {
			x, diags := hclsyntax.ParseExpression([]byte(src), "", hcl.InitialPos)
			require.False(t, diags.HasErrors(), "%s: %s", src, diags)
			for _, c := range calls(x) {
				called[c] = true
			}
		}
		for name := range fns {
			// A core:: name is the same function: one sample shows the
			// engine has that name too.
			require.True(t, called[strings.TrimPrefix(name, "core::")], "no sample calls %s", name)
		}
		require.True(t, called["core::lower"])

		// One expression, a list of each sample's JSON, so that the
		// engine's console answers in one line.
		all := "[" + strings.Join(slices.Collect(func(yield func(string) bool) {
			for _, src := range functionSamples {
				if !yield("jsonencode(" + src + ")") {
					return
				}
			}
		}), ", ") + "]"
		x, diags := hclsyntax.ParseExpression([]byte(all), "", hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%s", diags)
		v, diags := x.Value(&hcl.EvalContext{Functions: fns, Variables: map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(".")}),
		}})
		require.False(t, diags.HasErrors(), "%s", diags)
		var ours []string
		for _, el := range v.AsValueSlice() {
			ours = append(ours, el.AsString())
		}

		cli := filepath.Join(dir, "empty.tfrc")
		require.NoError(t, os.WriteFile(cli, nil, 0o644))
		cmd := exec.CommandContext(ctx, e.Path, "console")
		cmd.Dir, cmd.Stdin = dir, strings.NewReader("jsonencode("+all+")\n")
		cmd.Env = append(testenv.TerraformEnv(cli), "TF_DATA_DIR="+filepath.Join(dir, ".data"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s console: %s", e.Name, stderr.String())
		// The console prints the JSON as a quoted HCL string.
		px, diags := hclsyntax.ParseExpression(bytes.TrimSpace(out), "", hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%s console printed %s", e.Name, out)
		pv, diags := px.Value(nil)
		require.False(t, diags.HasErrors() || pv.Type() != cty.String, "%s console printed %s", e.Name, out)
		var theirs []string
		require.NoError(t, json.Unmarshal([]byte(pv.AsString()), &theirs), "%s console printed %s", e.Name, out)
		require.Len(t, theirs, len(functionSamples))
		for i := range functionSamples {
			require.Equal(t, theirs[i], ours[i], "%s under %s", functionSamples[i], info)
		}
	}
	testenv.Engines(t, run)
	t.Run(testenv.Terraform115.Name(), func(t *testing.T) { run(t, testenv.Terraform115.Engine(t)) })
}

// calls returns the names of the functions expression x calls.
func calls(x hcl.Expression) []string {
	var out []string
	_ = hclsyntax.VisitAll(x.(hclsyntax.Node), func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			out = append(out, c.Name)
		}
		return nil
	})
	return out
}
