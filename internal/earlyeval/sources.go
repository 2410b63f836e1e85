package earlyeval

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

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
// that evaluate to a known string by the engine's rule r (r.Eval: what
// the engine reads at init, with the functions it has: Functions); and,
// for each one that does not, where it is and why, `main.tf:12: module
// "net" source: ...`, sorted. values is nil when none evaluates. A
// reason never holds a variable's value: a source that reads a variable
// the engine does not evaluate (not const under Terraform, sensitive or
// ephemeral under OpenTofu) is not evaluated at all, and the reason
// names the variable (see Refused).
func (e *Inputs) ModuleSources(r Rules) (values map[string]string, unknown []string) {
	for _, s := range e.evalSources(r) {
		switch {
		case s.why != "":
			unknown = append(unknown, s.why)
		case values == nil:
			values = map[string]string{s.name: s.value}
		default:
			values[s.name] = s.value
		}
	}
	slices.Sort(unknown)
	return values, unknown
}

// Refused returns those of ModuleSources' unknown that the engine itself
// refuses by rule r, whatever the values (a variable it does not take):
// such a source reaches no module under that engine. Sorted.
func (e *Inputs) Refused(r Rules) []string {
	var out []string
	for _, s := range e.evalSources(r) {
		if s.refused {
			out = append(out, s.why)
		}
	}
	slices.Sort(out)
	return out
}

// evalSource is one dynamic module source as evalSources evaluated it:
// its value, or why not ("file:line: module "name" source: reason") and
// whether that is the engine's own refusal.
type evalSource struct {
	name, value, why string
	refused          bool
}

// evalSources evaluates the root module's dynamic module sources by rule
// r (see ModuleSources).
func (e *Inputs) evalSources(r Rules) []evalSource {
	var ctx *hcl.EvalContext
	var out []evalSource
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
				ctx = e.evalContext(r, e.functions(r))
			}
			s := evalSource{name: b.Labels[0]}
			why := e.refused(r, at.Expr.Variables())
			s.refused = why != ""
			if why == "" {
				val, diags := at.Expr.Value(ctx)
				switch {
				case diags.HasErrors():
					why = diags.Errs()[0].Error()
				case !val.IsWhollyKnown() || val.IsNull() || val.Type() != cty.String:
					why = "it is not a known string"
				default:
					s.value = val.AsString()
				}
			}
			if why != "" {
				s.why = fmt.Sprintf("%s:%d: module %q source: %s", at.Range.Filename, at.Range.Start.Line, s.name, why)
			}
			out = append(out, s)
		}
	}
	return out
}

// functions are the functions a source is evaluated with under rule r:
// Functions(r), and file for a path inside the directory the engine runs
// in (fileFunc); nil when r evaluates nothing.
func (e *Inputs) functions(r Rules) map[string]function.Function {
	base := Functions(r)
	if base == nil {
		return nil
	}
	out := maps.Clone(base)
	out["file"] = fileFunc(e.dir, e.overlay)
	out["core::file"] = out["file"]
	return out
}

// refused says why the engine, by rule r, does not evaluate an
// expression with these references: the first variable it reaches
// (through locals, followed transitively) whose value the engine does
// not take at init, named, never its value; "" when there is none.
func (e *Inputs) refused(r Rules, refs []hcl.Traversal) string {
	if r.Eval == EvalNone {
		return "the engine evaluates no expression in a module source (a source must be a literal string)"
	}
	var vars []string
	seen := map[string]bool{}
	queue := slices.Clone(refs)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		if len(t) < 2 {
			continue
		}
		attr, ok := t[1].(hcl.TraverseAttr)
		if !ok || seen[t.RootName()+"."+attr.Name] {
			continue
		}
		seen[t.RootName()+"."+attr.Name] = true
		switch t.RootName() {
		case "var":
			vars = append(vars, attr.Name)
		case "local":
			if x, ok := e.locals[attr.Name]; ok {
				queue = append(queue, x.Variables()...)
			}
		}
	}
	slices.Sort(vars)
	for _, n := range vars {
		if !e.declared[n] {
			continue // the engine reports it
		}
		if why := e.decls[n].refusal(r); why != "" {
			return "var." + n + " " + why
		}
	}
	return ""
}

// evalContext is what early evaluation can read in the root module by
// rule r, as the engine has it at init: each variable's value (the
// unit's, else its default, converted to its type) where the engine
// takes it, each local that evaluates from those, path.module and
// path.root ("."; the root module is where the engine runs), and the
// functions fns (Functions(r), the ones the engine has that are
// evaluated here). Everything else the engine may
// know is unknown here (a variable it does not take, a value we cannot
// read, a local that does not evaluate here, path.cwd), never missing:
// an expression reading it is unknown, never guessed.
func (e *Inputs) evalContext(r Rules, fns map[string]function.Function) *hcl.EvalContext {
	vars := map[string]cty.Value{}
	for n := range e.declared {
		vars[n] = cty.DynamicVal
		d := e.decls[n]
		if d.refusal(r) != "" || !d.typeOK {
			continue
		}
		var val cty.Value
		if v, ok := e.values[n]; ok {
			text, isString := strings.CutPrefix(v, "s:")
			if isString && (d.literal || e.inFile[n]) {
				// A -var or TF_VAR_ value of a variable without a type
				// or with a primitive one, or a string a var file gives.
				val = cty.StringVal(text)
			} else {
				// A var file's expression, or a -var or TF_VAR_ value of
				// a variable whose type is not primitive: the engine
				// parses it as an expression.
				x, diags := hclsyntax.ParseExpression([]byte(strings.TrimPrefix(text, "x:")), "", hcl.InitialPos)
				if diags.HasErrors() {
					continue
				}
				if val, diags = x.Value(nil); diags.HasErrors() {
					continue
				}
			}
		} else if x, ok := e.defExprs[n]; ok {
			var diags hcl.Diagnostics
			if val, diags = x.Value(nil); diags.HasErrors() {
				continue
			}
		} else {
			continue
		}
		if val, err := convert.Convert(val, d.typ); err == nil && val.IsWhollyKnown() {
			vars[n] = val
		}
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var": cty.ObjectVal(vars),
			"path": cty.ObjectVal(map[string]cty.Value{
				"module": cty.StringVal("."), "root": cty.StringVal("."), "cwd": cty.UnknownVal(cty.String),
			}),
		},
		Functions: fns,
	}
	// Locals in as many rounds as they need: each round adds those whose
	// references the rounds before made known.
	locals := map[string]cty.Value{}
	unknown := func() map[string]cty.Value {
		all := maps.Clone(locals)
		for n := range e.locals {
			if _, ok := all[n]; !ok {
				all[n] = cty.DynamicVal
			}
		}
		return all
	}
	for {
		ctx.Variables["local"] = cty.ObjectVal(unknown())
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

// varDecl is what a variable block says that early evaluation follows.
type varDecl struct {
	typ     cty.Type // its type constraint (cty.DynamicPseudoType: none, or any)
	typeOK  bool     // typ is what the engine reads (false: the value is unknown here)
	literal bool     // a -var or TF_VAR_ value is the string as given (no type, or a primitive one); else an expression
	// constant, sensitive and ephemeral are the block's arguments; one
	// that is not a literal bool counts as false for const, true for
	// the others: the engine reports it, and nothing is guessed.
	constant, sensitive, ephemeral bool
}

// declOf reads a variable block's arguments.
func declOf(attrs hcl.Attributes) varDecl {
	d := varDecl{typ: cty.DynamicPseudoType, typeOK: true, literal: true}
	flag := func(name string, otherwise bool) bool {
		at, ok := attrs[name]
		if !ok {
			return false
		}
		v, diags := at.Expr.Value(nil)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.Bool {
			return otherwise
		}
		return v.True()
	}
	d.constant, d.sensitive, d.ephemeral = flag("const", false), flag("sensitive", true), flag("ephemeral", true)
	at, ok := attrs["type"]
	if !ok {
		return d
	}
	switch hcl.ExprAsKeyword(at.Expr) {
	case "list":
		d.typ, d.literal = cty.List(cty.DynamicPseudoType), false
		return d
	case "map":
		d.typ, d.literal = cty.Map(cty.DynamicPseudoType), false
		return d
	}
	ty, defaults, diags := typeexpr.TypeConstraintWithDefaults(at.Expr)
	// Optional attributes' defaults are left to the engine: their
	// application has changed between HCL releases.
	d.typ, d.typeOK, d.literal = ty, !diags.HasErrors() && defaults == nil, ty.IsPrimitiveType()
	return d
}

// refusal says why the engine, by rule r, does not take this variable's
// value when it evaluates a module source at init ("" when it does).
func (d varDecl) refusal(r Rules) string {
	switch {
	case r.Eval == EvalConst && d.sensitive:
		return "is sensitive: Terraform evaluates only literal values and const variables during init, and a const variable cannot be sensitive"
	case r.Eval == EvalConst && d.ephemeral:
		return "is ephemeral: Terraform evaluates only literal values and const variables during init, and a const variable cannot be ephemeral"
	case r.Eval == EvalConst && !d.constant:
		return "is not const: Terraform evaluates only literal values and const variables (const = true) during init"
	case r.Eval == EvalStatic && d.sensitive:
		return "is sensitive: OpenTofu refuses a sensitive value, or one derived from it, in a module source"
	case r.Eval == EvalStatic && d.ephemeral:
		return "is ephemeral: OpenTofu refuses an ephemeral value, or one derived from it, in a module source"
	case r.Eval == EvalNone:
		return "is not evaluated: the engine evaluates no variable in a module source"
	}
	return ""
}

// SourceDirs returns, for each root module call whose source is an
// expression that values (ModuleSources' result under r) does not hold
// and that the engine does not refuse by rule r (it reads no variable
// the engine does not take), the directory the engine will find the
// module under when what is known of the source starts with a local
// path: "../../modules" for "../../modules/${tostring(var.name)}" or
// "${local.base}/${f(var.name)}" with local.base = "../../modules",
// the known prefix up to its last slash (the engine then reads a
// directory somewhere under it, whatever the rest evaluates to). The
// known prefix is the one the template (or format) gives when the
// functions the engine has and this package does not evaluate are taken
// as unknown. A source whose known part is no local path, or names a
// directory inside the component ("./mods/${...}": it is copied whole
// anyway), gives none. The caller materializes those directories so
// that the engine can answer for itself what ModuleSources could not.
func (e *Inputs) SourceDirs(r Rules, values map[string]string) map[string]string {
	var out map[string]string
	var ctx *hcl.EvalContext
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(rootSchema)
		for _, b := range c.Blocks {
			if b.Type != "module" {
				continue
			}
			name := b.Labels[0]
			mc, _, _ := b.Body.PartialContent(moduleSchema)
			at, ok := mc.Attributes["source"]
			if _, evaluated := values[name]; !ok || evaluated || !modtree.DynamicExpr(exprText(f, at.Expr)) ||
				e.refused(r, at.Expr.Variables()) != "" {
				continue
			}
			if ctx == nil {
				ctx = e.evalContext(r, withStubs(r))
				if fns := e.functions(r); fns != nil {
					ctx.Functions["file"], ctx.Functions["core::file"] = fns["file"], fns["core::file"]
				}
			}
			val, diags := at.Expr.Value(ctx)
			if diags.HasErrors() || val.IsKnown() || val.Type() != cty.String {
				continue
			}
			dir := localDir(val.Range().StringPrefix())
			if dir == "" {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[name] = dir
		}
	}
	return out
}

// localDir is the directory the known prefix of a source names when it
// is a local path ("./" or "../", the engines' rule for a local source)
// up to its last slash, outside the component; "" otherwise.
func localDir(prefix string) string {
	if !strings.HasPrefix(prefix, "./") && !strings.HasPrefix(prefix, "../") {
		return ""
	}
	i := strings.LastIndex(prefix, "/")
	if dir := path.Clean(prefix[:i+1]); dir == ".." || strings.HasPrefix(dir, "../") {
		return dir
	}
	return ""
}
