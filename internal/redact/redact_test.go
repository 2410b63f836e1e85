package redact

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// marker is the runner's SensitiveMarker; any string does.
const marker = "(sensitive value)"

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

// TestPlanJSON redacts every kind of place and mask, and the
// copies terraform leaves unmarked; identity fields, non-sensitive
// values, nulls and exact numbers stay.
func TestPlanJSON(t *testing.T) {
	got, err := PlanJSON([]byte(redactInput), marker)
	require.NoError(t, err)
	require.JSONEq(t, redactWant, string(got))
	require.Contains(t, string(got), "12345678901234567890", "numbers come out exactly")
	for _, s := range []string{"secret", `"ab"`, "s2", "s3"} {
		require.NotContains(t, string(got), s)
	}
}

// TestPlanJSONShortSecretNotEverywhere: a secret shorter than
// minTaintLen is redacted where it is marked, never elsewhere (it would
// rewrite unrelated values).
func TestPlanJSONShortSecretNotEverywhere(t *testing.T) {
	in := `{"resource_changes":[{"address":"x.a","change":{"actions":["create"],"after":{"k":"ab","other":"ab"},"after_sensitive":{"k":true}}}]}`
	got, err := PlanJSON([]byte(in), marker)
	require.NoError(t, err)
	require.JSONEq(t, `{"resource_changes":[{"address":"x.a","change":{"actions":["create"],"after":{"k":"(sensitive value)","other":"ab"},"after_sensitive":{"k":true}}}]}`, string(got))
}

func TestPlanJSONBadInput(t *testing.T) {
	for _, in := range []string{``, `[1]`, `null`, `{"a":`} {
		_, err := PlanJSON([]byte(in), marker)
		require.ErrorContains(t, err, "redact plan JSON", "%q", in)
	}
}

// FuzzPlanJSON: any value and mask in a resource change: no
// panic, valid JSON out; a value wholly marked is replaced, and one with
// nothing marked comes out as it went in.
func FuzzPlanJSON(f *testing.F) {
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
		got, err := PlanJSON([]byte(doc), marker)
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

// TestPlanJSONMarker: the caller's marker is what replaces a secret, and
// what redaction leaves of the rest is as the engine wrote it ("<" and
// "&" unescaped).
func TestPlanJSONMarker(t *testing.T) {
	in := `{"output_changes":{"pw":{"actions":["create"],"after":"marker-secret","after_sensitive":true},` +
		`"html":{"actions":["create"],"after":"<b>&amp;</b>","after_sensitive":false}}}`
	got, err := PlanJSON([]byte(in), "[REDACTED]")
	require.NoError(t, err)
	require.JSONEq(t, `{"output_changes":{"pw":{"actions":["create"],"after":"[REDACTED]","after_sensitive":true},`+
		`"html":{"actions":["create"],"after":"<b>&amp;</b>","after_sensitive":false}}}`, string(got))
	require.Contains(t, string(got), `"<b>&amp;</b>"`)
	require.NotContains(t, string(got), marker)
}
