package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testbackend"
	"github.com/tfisolate/tfisolate/internal/testenv"
)

// redactInput is a plan document with a sensitive value in every place
// terraform puts one: nested attributes, list elements, a set (its mask
// true as a whole), a mask whose shape does not match its value, drift,
// outputs, planned and prior values of root and child modules,
// variables, configuration defaults and module-call constants; plus
// unmarked copies of secrets, a short secret, identity fields and a
// number that must come out exactly.
const redactInput = `{
 "format_version": "1.2",
 "variables": {"pw": {"value": "var-secret-1"}, "region": {"value": "eu-west-1"}},
 "resource_changes": [{
  "address": "x.a", "type": "x", "name": "a", "mode": "managed",
  "change": {
   "actions": ["update"],
   "before": {"id": "i-1", "big": 12345678901234567890, "nested": {"deep": "old-deep-secret", "plain": "p"},
     "list": ["a", "list-secret-1"], "set": ["s1", "s2"], "odd": ["shape-secret"], "gone": null, "k": "ab"},
   "after": {"id": "i-1", "big": 12345678901234567890, "nested": {"deep": "new-deep-secret", "plain": "p"},
     "list": ["a", "list-secret-2"], "set": ["s1", "s3"], "odd": ["shape-secret"], "gone": null, "k": "ab",
     "copy": "new-deep-secret", "embedded": "url://user:new-deep-secret@host"},
   "before_sensitive": {"nested": {"deep": true}, "list": [false, true], "set": true, "odd": {"x": true}, "gone": true, "k": true},
   "after_sensitive": {"nested": {"deep": true}, "list": [false, true], "set": true, "odd": {"x": true}, "gone": true, "k": true},
   "after_unknown": {}
  }
 }],
 "resource_drift": [{"address": "x.a", "change": {"actions": ["update"], "before": {"nested": {"deep": "drift-secret"}}, "after": {"nested": {"deep": "x"}},
   "before_sensitive": {"nested": {"deep": true}}, "after_sensitive": {}}}],
 "output_changes": {
  "pw": {"actions": ["create"], "before": null, "after": "out-secret-1", "before_sensitive": false, "after_sensitive": true},
  "plain": {"actions": ["create"], "before": null, "after": "visible", "before_sensitive": false, "after_sensitive": false}
 },
 "planned_values": {
  "outputs": {"pw": {"sensitive": true, "value": "out-secret-1"}, "plain": {"sensitive": false, "value": "visible"}},
  "root_module": {"resources": [{"address": "x.a", "values": {"nested": {"deep": "new-deep-secret", "plain": "p"}}, "sensitive_values": {"nested": {"deep": true}}}],
   "child_modules": [{"address": "module.m", "resources": [{"address": "module.m.x.c", "values": {"v": "child-secret-1"}, "sensitive_values": {"v": true}}]}]}
 },
 "prior_state": {"values": {
  "outputs": {"pw": {"sensitive": true, "value": "old-out-secret"}},
  "root_module": {"resources": [{"address": "x.a", "name": "a", "values": {"nested": {"deep": "old-deep-secret"}}, "sensitive_values": {"nested": {"deep": true}}}]}
 }},
 "configuration": {"root_module": {
  "variables": {"pw": {"sensitive": true, "default": "default-secret"}, "region": {"default": "eu-west-1"}},
  "resources": [{"address": "x.a", "name": "a", "expressions": {"name": {"constant_value": "old-deep-secret"}}}],
  "module_calls": {"m": {"source": "./m",
   "expressions": {"pw": {"constant_value": "call-secret-1"}, "region": {"constant_value": "eu-west-1"}},
   "module": {"variables": {"pw": {"sensitive": true}, "d": {"sensitive": true, "default": "child-default-secret"}, "region": {}}}}}
 }}
}`

const redactWant = `{
 "format_version": "1.2",
 "variables": {"pw": {"value": "(sensitive value)"}, "region": {"value": "eu-west-1"}},
 "resource_changes": [{
  "address": "x.a", "type": "x", "name": "a", "mode": "managed",
  "change": {
   "actions": ["update"],
   "before": {"id": "i-1", "big": 12345678901234567890, "nested": {"deep": "(sensitive value)", "plain": "p"},
     "list": ["a", "(sensitive value)"], "set": "(sensitive value)", "odd": "(sensitive value)", "gone": null, "k": "(sensitive value)"},
   "after": {"id": "i-1", "big": 12345678901234567890, "nested": {"deep": "(sensitive value)", "plain": "p"},
     "list": ["a", "(sensitive value)"], "set": "(sensitive value)", "odd": "(sensitive value)", "gone": null, "k": "(sensitive value)",
     "copy": "(sensitive value)", "embedded": "(sensitive value)"},
   "before_sensitive": {"nested": {"deep": true}, "list": [false, true], "set": true, "odd": {"x": true}, "gone": true, "k": true},
   "after_sensitive": {"nested": {"deep": true}, "list": [false, true], "set": true, "odd": {"x": true}, "gone": true, "k": true},
   "after_unknown": {}
  }
 }],
 "resource_drift": [{"address": "x.a", "change": {"actions": ["update"], "before": {"nested": {"deep": "(sensitive value)"}}, "after": {"nested": {"deep": "x"}},
   "before_sensitive": {"nested": {"deep": true}}, "after_sensitive": {}}}],
 "output_changes": {
  "pw": {"actions": ["create"], "before": null, "after": "(sensitive value)", "before_sensitive": false, "after_sensitive": true},
  "plain": {"actions": ["create"], "before": null, "after": "visible", "before_sensitive": false, "after_sensitive": false}
 },
 "planned_values": {
  "outputs": {"pw": {"sensitive": true, "value": "(sensitive value)"}, "plain": {"sensitive": false, "value": "visible"}},
  "root_module": {"resources": [{"address": "x.a", "values": {"nested": {"deep": "(sensitive value)", "plain": "p"}}, "sensitive_values": {"nested": {"deep": true}}}],
   "child_modules": [{"address": "module.m", "resources": [{"address": "module.m.x.c", "values": {"v": "(sensitive value)"}, "sensitive_values": {"v": true}}]}]}
 },
 "prior_state": {"values": {
  "outputs": {"pw": {"sensitive": true, "value": "(sensitive value)"}},
  "root_module": {"resources": [{"address": "x.a", "name": "a", "values": {"nested": {"deep": "(sensitive value)"}}, "sensitive_values": {"nested": {"deep": true}}}]}
 }},
 "configuration": {"root_module": {
  "variables": {"pw": {"sensitive": true, "default": "(sensitive value)"}, "region": {"default": "eu-west-1"}},
  "resources": [{"address": "x.a", "name": "a", "expressions": {"name": {"constant_value": "(sensitive value)"}}}],
  "module_calls": {"m": {"source": "./m",
   "expressions": {"pw": {"constant_value": "(sensitive value)"}, "region": {"constant_value": "eu-west-1"}},
   "module": {"variables": {"pw": {"sensitive": true}, "d": {"sensitive": true, "default": "(sensitive value)"}, "region": {}}}}}
 }}
}`

// TestRedactPlanJSON redacts every kind of place and mask, and the
// copies terraform leaves unmarked; identity fields, non-sensitive
// values, nulls and exact numbers stay.
func TestRedactPlanJSON(t *testing.T) {
	got, err := redactPlanJSON([]byte(redactInput))
	require.NoError(t, err)
	require.JSONEq(t, redactWant, string(got))
	require.Contains(t, string(got), "12345678901234567890", "numbers come out exactly")
	for _, s := range []string{"secret", `"ab"`, "s2", "s3"} {
		require.NotContains(t, string(got), s)
	}
}

// TestRedactPlanJSONShortSecretNotEverywhere: a secret shorter than
// minTaintLen is redacted where it is marked, never elsewhere (it would
// rewrite unrelated values).
func TestRedactPlanJSONShortSecretNotEverywhere(t *testing.T) {
	in := `{"resource_changes":[{"address":"x.a","change":{"actions":["create"],"after":{"k":"ab","other":"ab"},"after_sensitive":{"k":true}}}]}`
	got, err := redactPlanJSON([]byte(in))
	require.NoError(t, err)
	require.JSONEq(t, `{"resource_changes":[{"address":"x.a","change":{"actions":["create"],"after":{"k":"(sensitive value)","other":"ab"},"after_sensitive":{"k":true}}}]}`, string(got))
}

func TestRedactPlanJSONBadInput(t *testing.T) {
	for _, in := range []string{``, `[1]`, `null`, `{"a":`} {
		_, err := redactPlanJSON([]byte(in))
		require.ErrorContains(t, err, "redact plan JSON", "%q", in)
	}
}

// FuzzRedactPlanJSON: any value and mask in a resource change: no
// panic, valid JSON out; a value wholly marked is replaced, and one with
// nothing marked comes out as it went in.
func FuzzRedactPlanJSON(f *testing.F) {
	f.Add(`{"a":{"b":["x","secret-1"]}}`, `{"a":{"b":[false,true]}}`)
	f.Add(`["s1","s2"]`, `true`)
	f.Add(`{"a":"b"}`, `[true]`)
	f.Add(`"x"`, `{"y":true}`)
	f.Add(`{"a":[{"b":"c"}]}`, `{"a":[{"b":false}]}`)
	f.Fuzz(func(t *testing.T, value, mask string) {
		var v, m any
		if json.Unmarshal([]byte(value), &v) != nil || json.Unmarshal([]byte(mask), &m) != nil {
			t.Skip()
		}
		doc := `{"resource_changes":[{"address":"x.a","change":{"actions":["create"],"after":` + value + `,"after_sensitive":` + mask + `}}]}`
		got, err := redactPlanJSON([]byte(doc))
		require.NoError(t, err)
		var out struct {
			ResourceChanges []struct {
				Address string
				Change  struct {
					Actions []string
					After   json.RawMessage
				}
			} `json:"resource_changes"`
		}
		require.NoError(t, json.Unmarshal(got, &out), "%s", got)
		require.Len(t, out.ResourceChanges, 1)
		rc := out.ResourceChanges[0]
		require.Equal(t, "x.a", rc.Address)
		require.Equal(t, []string{"create"}, rc.Change.Actions)
		switch {
		case v == nil:
			require.Equal(t, "null", string(rc.Change.After))
		case m == true:
			require.Equal(t, `"(sensitive value)"`, string(rc.Change.After))
		case !anySensitive(m):
			want, _ := json.Marshal(v)
			var after any
			require.NoError(t, json.Unmarshal(rc.Change.After, &after))
			got, _ := json.Marshal(after)
			require.Equal(t, string(want), string(got))
		case marksValue(v, m):
			require.Contains(t, string(rc.Change.After), `"(sensitive value)"`, "a marked value was left")
		}
	})
}

// marksValue reports whether mask m marks a non-null part of v.
func marksValue(v, m any) bool {
	if v == nil {
		return false
	}
	switch mm := m.(type) {
	case bool:
		return mm
	case map[string]any:
		if o, ok := v.(map[string]any); ok {
			for k, sub := range mm {
				if marksValue(o[k], sub) {
					return true
				}
			}
			return false
		}
	case []any:
		if a, ok := v.([]any); ok && len(a) == len(mm) {
			for i := range a {
				if marksValue(a[i], mm[i]) {
					return true
				}
			}
			return false
		}
	}
	return anySensitive(m)
}

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

	for f, perm := range map[string]os.FileMode{p.JSONFile: 0o600, p.RedactedJSONFile: 0o644} {
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
