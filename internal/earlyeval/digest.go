package earlyeval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// BackendDigest hashes what the root module's backend and cloud blocks
// read (see digest): "" when they read no variable and no local.
func (e *Inputs) BackendDigest() string { return e.digest(e.backendRefs()) }

// ModuleDigest hashes what the source and version of the root module's
// module block name read (see digest): "" when they read no variable and
// no local.
func (e *Inputs) ModuleDigest(name string) string { return e.digest(e.moduleRefs(name)) }

// backendRefs returns the references the root module's backend and
// cloud blocks make.
func (e *Inputs) backendRefs() []hcl.Traversal {
	var out []hcl.Traversal
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(rootSchema)
		for _, tb := range c.Blocks {
			if tb.Type != "terraform" {
				continue
			}
			tc, _, _ := tb.Body.PartialContent(terraformSchema)
			for _, b := range tc.Blocks {
				out = append(out, bodyRefs(b.Body)...)
			}
		}
	}
	return out
}

// moduleRefs returns the references of the source and version of the
// root module's module block name.
func (e *Inputs) moduleRefs(name string) []hcl.Traversal {
	var out []hcl.Traversal
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(rootSchema)
		for _, b := range c.Blocks {
			if b.Type != "module" || b.Labels[0] != name {
				continue
			}
			mc, _, _ := b.Body.PartialContent(moduleSchema)
			for _, at := range mc.Attributes {
				out = append(out, at.Expr.Variables()...)
			}
		}
	}
	return out
}

// bodyRefs returns every reference in a block body, nested blocks
// included.
func bodyRefs(body hcl.Body) []hcl.Traversal {
	if sb, ok := body.(*hclsyntax.Body); ok {
		var out []hcl.Traversal
		for _, at := range sb.Attributes {
			out = append(out, at.Expr.Variables()...)
		}
		for _, b := range sb.Blocks {
			out = append(out, bodyRefs(b.Body)...)
		}
		return out
	}
	attrs, _ := body.JustAttributes() // JSON: nested blocks are object-valued attributes
	var out []hcl.Traversal
	for _, at := range attrs {
		out = append(out, at.Expr.Variables()...)
	}
	return out
}

// digest hashes what the values of expressions with these references
// depend on: every variable they reach (through locals, followed
// transitively), with its default and the unit's value for it, and
// every local's expression on the way. The expressions themselves are
// not evaluated: the records that use the digest need only know when
// an input changed. It is "" when they reach no variable and no local:
// the expressions are literal.
func (e *Inputs) digest(refs []hcl.Traversal) string {
	lines := map[string]bool{}
	seen := map[string]bool{}
	queue := slices.Clone(refs)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		if len(t) < 2 {
			continue
		}
		attr, ok := t[1].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		k := t.RootName() + "." + attr.Name
		if seen[k] {
			continue
		}
		seen[k] = true
		switch t.RootName() {
		case "var":
			v, given := e.values[attr.Name]
			if !given {
				v = "unset"
			}
			lines[fmt.Sprintf("var %q declared=%t default=%q value=%q", attr.Name, e.declared[attr.Name], e.defaults[attr.Name], v)] = true
		case "local":
			lines[fmt.Sprintf("local %q = %q", attr.Name, e.localSrc[attr.Name])] = true
			if x, ok := e.locals[attr.Name]; ok {
				queue = append(queue, x.Variables()...)
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	h := sha256.New()
	for _, l := range slices.Sorted(maps.Keys(lines)) {
		fmt.Fprintln(h, l)
	}
	return hex.EncodeToString(h.Sum(nil))
}
