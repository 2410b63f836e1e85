package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A secret is matched wherever else it shows (the copies pass) only
// from minTaintLen characters on, and inside a longer string only from
// minTaintSubstr on: shorter ones would rewrite unrelated values.
const (
	minTaintLen    = 4
	minTaintSubstr = 8
)

// PlanJSON returns doc, the engine's JSON rendering of a plan
// (terraform show -json), with every sensitive value replaced by marker
// (see the package doc for what counts). doc itself is left as it is. It
// fails, with "redact plan JSON" in the error, only when doc is not a
// JSON object.
func PlanJSON(doc []byte, marker string) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber() // numbers come out exactly as terraform wrote them
	var plan map[string]any
	if err := d.Decode(&plan); err != nil {
		return nil, fmt.Errorf("redact plan JSON: %w", err)
	}
	if plan == nil {
		return nil, fmt.Errorf("redact plan JSON: not a JSON object")
	}
	r := &redactor{marker: marker, secrets: map[string]bool{}}
	r.plan(plan)
	r.copies(plan, false)
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // as terraform writes it: "<" stays "<"
	if err := e.Encode(plan); err != nil {
		return nil, fmt.Errorf("redact plan JSON: %w", err)
	}
	return b.Bytes(), nil
}

// redactor holds the marker and the strings the structural pass removed.
type redactor struct {
	marker  string
	secrets map[string]bool
}

func (r *redactor) plan(p map[string]any) {
	for _, key := range []string{"resource_changes", "resource_drift"} {
		for _, rc := range list(p[key]) {
			r.change(obj(obj(rc)["change"]))
		}
	}
	for _, dc := range list(p["deferred_changes"]) {
		r.change(obj(obj(obj(dc)["resource_change"])["change"]))
	}
	for _, oc := range obj(p["output_changes"]) {
		r.change(obj(oc))
	}
	r.values(obj(p["planned_values"]))
	r.values(obj(obj(p["prior_state"])["values"]))
	root := obj(obj(p["configuration"])["root_module"])
	for name, v := range obj(p["variables"]) {
		if sensitiveVar(root, name) {
			r.replace(obj(v), "value")
		}
	}
	r.configModule(root)
}

// change redacts one change's before and after by its masks.
func (r *redactor) change(c map[string]any) {
	if c == nil {
		return
	}
	for _, k := range []string{"before", "after"} {
		if v, ok := c[k]; ok {
			c[k] = r.mask(v, c[k+"_sensitive"])
		}
	}
}

// values redacts a planned_values or prior_state values object.
func (r *redactor) values(v map[string]any) {
	for _, o := range obj(v["outputs"]) {
		if out := obj(o); out["sensitive"] == true {
			r.replace(out, "value")
		}
	}
	r.stateModule(obj(v["root_module"]))
}

func (r *redactor) stateModule(m map[string]any) {
	for _, res := range list(m["resources"]) {
		if rs := obj(res); rs != nil {
			if v, ok := rs["values"]; ok {
				rs["values"] = r.mask(v, rs["sensitive_values"])
			}
		}
	}
	for _, c := range list(m["child_modules"]) {
		r.stateModule(obj(c))
	}
}

// configModule redacts the defaults of a module's sensitive variables,
// and the constants its module calls give to their sensitive variables.
func (r *redactor) configModule(m map[string]any) {
	for name, v := range obj(m["variables"]) {
		if sensitiveVar(m, name) {
			r.replace(obj(v), "default")
		}
	}
	for _, call := range obj(m["module_calls"]) {
		c := obj(call)
		child := obj(c["module"])
		for name, e := range obj(c["expressions"]) {
			if sensitiveVar(child, name) {
				r.replace(obj(e), "constant_value")
			}
		}
		r.configModule(child)
	}
}

func sensitiveVar(module map[string]any, name string) bool {
	return obj(obj(module["variables"])[name])["sensitive"] == true
}

// replace redacts o[key] whole, if set.
func (r *redactor) replace(o map[string]any, key string) {
	if v, ok := o[key]; ok {
		o[key] = r.mask(v, true)
	}
}

// mask returns v with the parts its sensitivity mask m marks true
// replaced: m is true (all of v), an object (by attribute) or an array
// (by element) of masks, anything else for nothing sensitive. A mask
// whose shape does not match v's but marks something redacts all of v.
func (r *redactor) mask(v, m any) any {
	if v == nil {
		return nil
	}
	switch mm := m.(type) {
	case bool:
		if mm {
			r.taint(v)
			return r.marker
		}
		return v
	case map[string]any:
		if o, ok := v.(map[string]any); ok {
			for k, sub := range mm {
				if x, ok := o[k]; ok {
					o[k] = r.mask(x, sub)
				}
			}
			return v
		}
	case []any:
		if a, ok := v.([]any); ok && len(a) == len(mm) {
			for i := range a {
				a[i] = r.mask(a[i], mm[i])
			}
			return v
		}
	default:
		return v
	}
	if anySensitive(m) {
		r.taint(v)
		return r.marker
	}
	return v
}

func anySensitive(m any) bool {
	switch mm := m.(type) {
	case bool:
		return mm
	case map[string]any:
		for _, v := range mm {
			if anySensitive(v) {
				return true
			}
		}
	case []any:
		for _, v := range mm {
			if anySensitive(v) {
				return true
			}
		}
	}
	return false
}

// taint records the strings in a value being redacted.
func (r *redactor) taint(v any) {
	switch t := v.(type) {
	case string:
		if len(t) >= minTaintLen && t != r.marker {
			r.secrets[t] = true
		}
	case map[string]any:
		for _, x := range t {
			r.taint(x)
		}
	case []any:
		for _, x := range t {
			r.taint(x)
		}
	}
}

// identityKeys name a plan's structure, never a value: outside values,
// they are left as they are.
var identityKeys = map[string]bool{
	"address": true, "previous_address": true, "module_address": true, "mode": true, "type": true, "name": true,
	"index": true, "provider_name": true, "provider_config_key": true, "full_name": true, "actions": true,
	"action_reason": true, "references": true, "source": true, "version_constraint": true,
	"format_version": true, "terraform_version": true,
}

// valueKeys hold values: everything under them may be a copy.
var valueKeys = map[string]bool{
	"before": true, "after": true, "values": true, "value": true, "constant_value": true, "default": true,
	"expressions": true, // by attribute name: "name" there is an argument
}

// copies removes every string that is or holds a recorded secret.
func (r *redactor) copies(v any, inValue bool) any {
	if len(r.secrets) == 0 {
		return v
	}
	switch t := v.(type) {
	case string:
		if r.holdsSecret(t) {
			return r.marker
		}
	case map[string]any:
		for k, x := range t {
			if !inValue && identityKeys[k] {
				continue
			}
			t[k] = r.copies(x, inValue || valueKeys[k])
		}
	case []any:
		for i := range t {
			t[i] = r.copies(t[i], inValue)
		}
	}
	return v
}

func (r *redactor) holdsSecret(s string) bool {
	if r.secrets[s] {
		return true
	}
	for sec := range r.secrets {
		if len(sec) >= minTaintSubstr && strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
