package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// redactComponent puts secrets everywhere a plan can hold them: a
// sensitive variable (from a var file) in a provider's resource and in
// terraform_data (whose output copies its input unmarked), a nested
// attribute and a list element marked sensitive, a sensitive output, a
// sensitive variable's default, and a module call's constant given to a
// sensitive variable.
const redactComponent = `
terraform {
  required_providers {
    tfitest = {
      source  = "` + shortSource + `"
      version = ">= 1.0.0"
    }
  }
}
variable "secret" {
  type      = string
  sensitive = true
}
variable "defaulted" {
  type      = string
  sensitive = true
  default   = "redact-DEFAULT-secret-4"
}
resource "tfitest_item" "this" {
  name    = "item"
  payload = var.secret
}
resource "terraform_data" "s" { input = var.secret }
resource "terraform_data" "n" {
  input = { plain = "visible-plain", nested = { deep = sensitive("redact-NESTED-secret-2"), list = ["visible-elem", sensitive("redact-LIST-secret-5")] } }
}
module "m" {
  source = "./m"
  pw     = "redact-CALL-secret-3"
}
output "secret" {
  value     = var.secret
  sensitive = true
}
output "defaulted" {
  value     = var.defaulted
  sensitive = true
}
output "child" {
  value     = module.m.out
  sensitive = true
}
output "plain" { value = "visible-output" }
`

const redactModule = `
variable "pw" {
  type      = string
  sensitive = true
}
resource "terraform_data" "c" { input = var.pw }
output "out" {
  value     = var.pw
  sensitive = true
}
`

// TestSavePlanRedactedJSON: SavePlan writes, beside the raw plan JSON
// (0600, every secret in clear as terraform renders it), a redacted one
// (0644) that holds none of the secrets, old or new, and is still the
// same plan: terraform-json reads it, with the raw one's resources,
// actions and output changes. Result.Plan and the JSON report name it.
// Under terraform and OpenTofu (each renders the plan itself).
func TestSavePlanRedactedJSON(t *testing.T) {
	t.Parallel()
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		src := filepath.Join(w.dir, "components", "redact")
		require.NoError(t, os.MkdirAll(filepath.Join(src, "m"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(redactComponent), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, "m", "main.tf"), []byte(redactModule), 0o644))
		// Its state on a backend every machine reaches: the test carries
		// the plan in a bundle too, which a local state never allows.
		srv := testbackend.StartHTTPState(t)
		unit := func(secret string) Unit {
			u := w.unit(t, "redact", src, map[string]any{}, "redact")
			u.Workdir.Files["backend.tf.json"] = srv.BackendJSON("redact")
			u.Workdir.Files["secret.tfvars.json"] = []byte(`{"secret":"` + secret + `"}`)
			u.Args.VarFiles = []string{"secret.tfvars.json"}
			return u
		}
		requireRedactedPlan(t, w.runner(t), unit)
	})
}

func requireRedactedPlan(t *testing.T, r *Runner, unit func(secret string) Unit) {
	_, err := r.Run(testCtx(t), Apply, unit("redact-OLD-secret-0"))
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), SavePlan, unit("redact-VAR-secret-1"))
	require.NoError(t, err)
	p := rep.Results[0].Plan
	require.NotNil(t, p)
	require.Equal(t, filepath.Join(filepath.Dir(p.JSONFile), planRedactedName), p.RedactedJSONFile)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(b), `"redacted_json_file":"`+p.RedactedJSONFile+`"`)

	for f, perm := range map[string]os.FileMode{p.JSONFile: 0o600, p.RedactedJSONFile: 0o600} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, perm, fi.Mode().Perm(), f)
	}
	raw, redacted := readFile(t, p.JSONFile), readFile(t, p.RedactedJSONFile)
	secrets := []string{"redact-OLD-secret-0", "redact-VAR-secret-1", "redact-NESTED-secret-2", "redact-CALL-secret-3",
		"redact-DEFAULT-secret-4", "redact-LIST-secret-5"}
	for _, s := range secrets {
		require.Contains(t, raw, s, "the raw rendering holds every secret")
		require.NotContains(t, redacted, s, "the redacted rendering")
	}
	for _, s := range []string{"visible-plain", "visible-elem", "visible-output", SensitiveMarker} {
		require.Contains(t, redacted, s)
	}

	var rawPlan, redPlan tfjson.Plan
	require.NoError(t, json.Unmarshal([]byte(raw), &rawPlan))
	require.NoError(t, json.Unmarshal([]byte(redacted), &redPlan), "the redacted rendering is a plan document")
	actions := func(p *tfjson.Plan) map[string]string {
		out := map[string]string{}
		for _, rc := range p.ResourceChanges {
			out[rc.Address] = fmt.Sprint(rc.Change.Actions)
		}
		for name, oc := range p.OutputChanges {
			out["output."+name] = fmt.Sprint(oc.Actions)
		}
		return out
	}
	want := actions(&rawPlan)
	require.Contains(t, want, "tfitest_item.this")
	require.Contains(t, want, "module.m.terraform_data.c")
	require.Equal(t, "[update]", want["tfitest_item.this"], "the new secret changes the payload")
	require.Equal(t, want, actions(&redPlan))
	sum, err := summarizePlan([]byte(redacted))
	require.NoError(t, err)
	require.Equal(t, p.Changes, sum.Changes)

	// A plan carried in a bundle gets its redacted rendering where it is
	// imported (the bundle is the raw plan's; written here again).
	bundles := t.TempDir()
	_, err = r.Run(testCtx(t), ExportPlan(bundles, nil), unit("redact-VAR-secret-1"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(p.RedactedJSONFile))
	rep, err = r.Run(testCtx(t), ImportPlan(bundles, nil), unit("redact-VAR-secret-1"))
	require.NoError(t, err)
	require.Equal(t, p.RedactedJSONFile, rep.Results[0].Plan.RedactedJSONFile)
	require.Equal(t, redacted, readFile(t, p.RedactedJSONFile))

	// A SavePlan that fails leaves no redacted plan of the older one.
	bad := unit("")
	bad.Workdir.Files["secret.tfvars.json"] = []byte(`{`)
	rep, _ = r.Run(testCtx(t), SavePlan, bad)
	require.Equal(t, Failed, rep.Results[0].Status)
	require.NoFileExists(t, p.RedactedJSONFile)
}
