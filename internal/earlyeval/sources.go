package earlyeval

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// HasDynamicSources reports whether the root module at dir, read by
// rule, calls a module whose source is an expression
// (modtree.DynamicExpr). It walks the module tree on every call: a
// caller that asks often keeps the answer.
func HasDynamicSources(dir string, rule modtree.Files) bool {
	root, _ := filepath.Abs(dir)
	return slices.ContainsFunc(modtree.Walk(dir, rule).Calls, func(c modtree.Call) bool {
		return c.Parent == root && modtree.DynamicExpr(c.Source)
	})
}

// ModuleSources returns the values of the root module's module sources
// that are expressions (modtree.DynamicExpr), by module name, for those
// that evaluate, with what evalContext holds, to a string the way the
// engine evaluates them at init; and, for each one that does not, where
// it is and why, `main.tf:12: module "net" source: ...`, sorted. values
// is nil when none evaluates.
func (e *Inputs) ModuleSources() (values map[string]string, unknown []string) {
	var ctx *hcl.EvalContext
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(rootSchema)
		for _, b := range c.Blocks {
			if b.Type != "module" {
				continue
			}
			mc, _, _ := b.Body.PartialContent(moduleSchema)
			at, ok := mc.Attributes["source"]
			if !ok || !modtree.DynamicExpr(exprText(f, at.Expr)) {
				continue
			}
			if ctx == nil {
				ctx = e.evalContext()
			}
			name := b.Labels[0]
			val, diags := at.Expr.Value(ctx)
			var why string
			switch {
			case diags.HasErrors():
				why = diags.Errs()[0].Error()
			case !val.IsWhollyKnown() || val.IsNull() || val.Type() != cty.String:
				why = "it is not a known string"
			}
			if why != "" {
				unknown = append(unknown, fmt.Sprintf("%s:%d: module %q source: %s", at.Range.Filename, at.Range.Start.Line, name, why))
				continue
			}
			if values == nil {
				values = map[string]string{}
			}
			values[name] = val.AsString()
		}
	}
	slices.Sort(unknown)
	return values, unknown
}

// evalContext is what early evaluation can read in the root module, as
// the engine has it at init: each variable's value (the unit's, else its
// default), each local that evaluates from those alone, and path.module
// and path.root ("."; the root module is where the engine runs). Nothing
// else: no function, no path.cwd, no resource. An expression reading
// anything more does not evaluate here, and is never guessed.
func (e *Inputs) evalContext() *hcl.EvalContext {
	vars := map[string]cty.Value{}
	for n := range e.declared {
		if v, ok := e.values[n]; ok {
			if s, ok := strings.CutPrefix(v, "s:"); ok {
				vars[n] = cty.StringVal(s)
				continue
			}
			x, diags := hclsyntax.ParseExpression([]byte(strings.TrimPrefix(v, "x:")), "", hcl.InitialPos)
			if diags.HasErrors() {
				continue
			}
			if val, diags := x.Value(nil); !diags.HasErrors() && val.IsWhollyKnown() {
				vars[n] = val
			}
			continue
		}
		if d, ok := e.defExprs[n]; ok {
			if val, diags := d.Value(nil); !diags.HasErrors() && val.IsWhollyKnown() {
				vars[n] = val
			}
		}
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"var":  cty.ObjectVal(vars),
		"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal("."), "root": cty.StringVal(".")}),
	}}
	// Locals in as many rounds as they need: each round adds those whose
	// references the rounds before made known.
	locals := map[string]cty.Value{}
	for {
		ctx.Variables["local"] = cty.ObjectVal(locals)
		added := false
		for n, x := range e.locals {
			if _, done := locals[n]; done {
				continue
			}
			if val, diags := x.Value(ctx); !diags.HasErrors() && val.IsWhollyKnown() {
				locals[n] = val
				added = true
			}
		}
		if !added {
			return ctx
		}
	}
}
