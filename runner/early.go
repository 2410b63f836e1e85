package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/workdir"
)

// Early evaluation (OpenTofu 1.8, Terraform 1.15): a backend block, a
// module's source and version may be built from input variables and
// locals, evaluated at init. The runner then gives init and get the
// unit's variables, and what init depends on includes the values those
// expressions read. For the records the runner does not evaluate the
// expressions: it follows their references (locals transitively) to the
// variables, and takes each variable's declaration default and the value
// the unit gives it, with terraform's precedence (TF_VAR_NAME, terraform.tfvars,
// terraform.tfvars.json, *.auto.tfvars[.json] in name order,
// Args.VarFiles in order, Args.Vars), as text. Two ways of writing one
// value (a -var and the same string in a var file) count as a change:
// init runs once more, and a backend counts as changed. Only a root
// module's source is evaluated, so that the workdir holds the local
// module it selects (moduleSources): from those values, locals and
// path.module, no functions; what does not evaluate is left to the
// engine, never guessed.

// earlyRules is what an engine evaluates from the unit's variables
// before plan, and so which commands besides plan, apply and destroy are
// given them. earlyRulesOf decides it, from the engine's kind and
// version, in this one place.
type earlyRules struct {
	// Init: module sources and versions and the backend may read
	// variables; init and get take -var and -var-file.
	Init bool
	// Workspace: workspace select takes them too (OpenTofu); Terraform
	// refuses -var there.
	Workspace bool
	// Inspect: validate, and show of a saved plan, load the
	// configuration with its module sources and are given them
	// (Terraform 1.15 checks the sources against the installed modules:
	// "Module source has changed" without them).
	Inspect bool
}

// Where early evaluation starts: the first OpenTofu and Terraform
// versions that evaluate variables in backend blocks and module sources
// and take -var and -var-file at init and get.
var (
	tofuEarlySince      = version.Must(version.NewVersion("1.8.0"))
	terraformEarlySince = version.Must(version.NewVersion("1.15.0"))
)

// earlyRulesOf returns engine e's rules; a prerelease counts as its
// release (1.15.0-beta1 has what 1.15.0 has).
func earlyRulesOf(e engine.Info) earlyRules {
	if e.Version == nil {
		return earlyRules{}
	}
	v := e.Version.Core()
	switch {
	case e.Kind == engine.OpenTofu && v.GreaterThanOrEqual(tofuEarlySince):
		return earlyRules{Init: true, Workspace: true, Inspect: true}
	case e.Kind == engine.Terraform && v.GreaterThanOrEqual(terraformEarlySince):
		return earlyRules{Init: true, Inspect: true}
	}
	return earlyRules{}
}

// earlyEvaluation reports whether engine e evaluates variables early.
func earlyEvaluation(e engine.Info) bool { return earlyRulesOf(e).Init }

// configRule is the configuration-file rule of engine kind k (see
// modtree.Files): the one decision, taken from the engine that runs.
func configRule(k engine.Kind) modtree.Files {
	if k == engine.OpenTofu {
		return modtree.TofuFiles
	}
	return modtree.TerraformFiles
}

// workdirEngine is the workdir.Engine of engine kind k.
func workdirEngine(k engine.Kind) workdir.Engine {
	if k == engine.OpenTofu {
		return workdir.OpenTofu
	}
	return workdir.Terraform
}

// forEngine returns a copy of units set up for engine e: each workdir
// spec names the engine (so the workdir follows its configuration
// files), and with early evaluation the units' variables go to init and
// get too. The caller's units are not changed.
func forEngine(units []Unit, e engine.Info) []Unit {
	out := slices.Clone(units)
	for i := range out {
		out[i].Workdir.Engine = workdirEngine(e.Kind)
		out[i].Args.early = earlyRulesOf(e)
	}
	return out
}

// earlyInputs is what early evaluation reads in a root module: the
// variables' defaults and the locals as written, and the values the unit
// gives its variables.
type earlyInputs struct {
	files    []*hcl.File
	defaults map[string]string         // variable -> its default's text ("" when it has none)
	defExprs map[string]hcl.Expression // variable -> its default
	declared map[string]bool           // variables the module declares
	locals   map[string]hcl.Expression // local -> its expression
	localSrc map[string]string         // local -> its expression's text
	values   map[string]string         // variable -> the value the unit gives it, tagged by kind
}

var (
	earlyRootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "module", LabelNames: []string{"name"}},
	}}
	earlyTerraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
	}}
	earlyVariableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "default"}}}
	earlyModuleSchema   = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}}}
)

// newEarlyInputs reads the root module's files (as readRootConfig read
// them) and the values the unit gives its variables: env is the unit's
// environment (TF_VAR_*), dir the directory terraform runs in (its
// terraform.tfvars, *.auto.tfvars and relative var files).
func newEarlyInputs(files []configFile, dir string, a Args, env map[string]string) *earlyInputs {
	return newEarlyInputsFrom(files, dir, nil, a, env)
}

// newEarlyInputsFrom is newEarlyInputs for a component not yet prepared:
// overlay holds the generated files (Spec.Files), which stand in dir
// beside, or in place of, the component's own files.
func newEarlyInputsFrom(files []configFile, dir string, overlay map[string][]byte, a Args, env map[string]string) *earlyInputs {
	e := &earlyInputs{defaults: map[string]string{}, defExprs: map[string]hcl.Expression{}, declared: map[string]bool{}, locals: map[string]hcl.Expression{},
		localSrc: map[string]string{}, values: map[string]string{}}
	p := hclparse.NewParser()
	for _, cf := range files {
		f := parseConfig(p, cf.name, cf.data)
		if f == nil {
			continue
		}
		e.files = append(e.files, f)
		c, _, _ := f.Body.PartialContent(earlyRootSchema)
		for _, b := range c.Blocks {
			switch b.Type {
			case "variable":
				n := b.Labels[0]
				e.declared[n] = true
				vc, _, _ := b.Body.PartialContent(earlyVariableSchema)
				if d, ok := vc.Attributes["default"]; ok {
					e.defaults[n] = exprText(f, d.Expr)
					e.defExprs[n] = d.Expr
				}
			case "locals":
				attrs, _ := b.Body.JustAttributes()
				for n, at := range attrs {
					e.locals[n] = at.Expr
					e.localSrc[n] = exprText(f, at.Expr)
				}
			}
		}
	}
	// Lowest precedence first: each later source replaces the value.
	for k, v := range env {
		if n, ok := strings.CutPrefix(k, "TF_VAR_"); ok && n != "" {
			e.values[n] = "s:" + v
		}
	}
	auto, _ := filepath.Glob(filepath.Join(dir, "*.auto.tfvars"))
	autoJSON, _ := filepath.Glob(filepath.Join(dir, "*.auto.tfvars.json"))
	auto = append(auto, autoJSON...)
	for n := range overlay {
		if !strings.Contains(n, "/") && (strings.HasSuffix(n, ".auto.tfvars") || strings.HasSuffix(n, ".auto.tfvars.json")) {
			auto = append(auto, filepath.Join(dir, n))
		}
	}
	slices.Sort(auto)
	auto = slices.Compact(auto)
	varFiles := append([]string{filepath.Join(dir, "terraform.tfvars"), filepath.Join(dir, "terraform.tfvars.json")}, auto...)
	for _, f := range a.VarFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		varFiles = append(varFiles, f)
	}
	for _, path := range varFiles {
		if rel, err := filepath.Rel(dir, path); err == nil {
			if b, ok := overlay[filepath.ToSlash(rel)]; ok {
				e.readVars(path, b)
				continue
			}
		}
		e.readVarFile(path)
	}
	for _, n := range slices.Sorted(maps.Keys(a.Vars)) {
		e.values[n] = "s:" + a.Vars[n]
	}
	return e
}

// readVarFile takes the values a variable definitions file gives; a file
// that is missing or does not parse gives none (terraform reports it).
func (e *earlyInputs) readVarFile(path string) {
	b, err := readInput(path)
	if err != nil {
		return
	}
	e.readVars(path, b)
}

// readVars takes the values of the variable definitions file path whose
// content is b.
func (e *earlyInputs) readVars(path string, b []byte) {
	f := parseConfig(hclparse.NewParser(), path, b) // a parser of its own: one caches files by name
	if f == nil {
		return
	}
	attrs, _ := f.Body.JustAttributes()
	for n, at := range attrs {
		if v, diags := at.Expr.Value(nil); !diags.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			e.values[n] = "s:" + v.AsString()
		} else {
			e.values[n] = "x:" + exprText(f, at.Expr)
		}
	}
}

// parseConfig parses one configuration file by its name's syntax, nil
// when it does not parse (terraform reports it).
func parseConfig(p *hclparse.Parser, name string, b []byte) *hcl.File {
	var f *hcl.File
	var diags hcl.Diagnostics
	if modtree.IsJSON(name) {
		f, diags = p.ParseJSON(b, name)
	} else {
		f, diags = p.ParseHCL(b, name)
	}
	if f == nil || diags.HasErrors() {
		return nil
	}
	return f
}

// exprText is an expression's source text.
func exprText(f *hcl.File, e hcl.Expression) string {
	return string(e.Range().SliceBytes(f.Bytes))
}

// backendRefs returns the references the root module's backend and
// cloud blocks make.
func (e *earlyInputs) backendRefs() []hcl.Traversal {
	var out []hcl.Traversal
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(earlyRootSchema)
		for _, tb := range c.Blocks {
			if tb.Type != "terraform" {
				continue
			}
			tc, _, _ := tb.Body.PartialContent(earlyTerraformSchema)
			for _, b := range tc.Blocks {
				out = append(out, bodyRefs(b.Body)...)
			}
		}
	}
	return out
}

// moduleRefs returns the references of the source and version of the
// root module's module block name.
func (e *earlyInputs) moduleRefs(name string) []hcl.Traversal {
	var out []hcl.Traversal
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(earlyRootSchema)
		for _, b := range c.Blocks {
			if b.Type != "module" || b.Labels[0] != name {
				continue
			}
			mc, _, _ := b.Body.PartialContent(earlyModuleSchema)
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
// every local's expression on the way. It is "" when they reach no
// variable and no local: the expressions are literal.
func (e *earlyInputs) digest(refs []hcl.Traversal) string {
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

// evalContext is what early evaluation can read in the root module, as
// the engine has it at init: each variable's value (the unit's, else its
// default), each local that evaluates from those alone, and path.module
// and path.root ("."; the root module is where the engine runs). Nothing
// else: no function, no path.cwd, no resource. An expression reading
// anything more does not evaluate here, and is never guessed.
func (e *earlyInputs) evalContext() *hcl.EvalContext {
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

// moduleSources returns the values of the root module's module sources
// that are expressions (modtree.DynamicExpr), by module name, for those
// that evaluate, with what evalContext holds, to a string the way the
// engine evaluates them at init; and, for each one that does not, where
// it is and why, "main.tf:12: module \"net\" source: ...".
func (e *earlyInputs) moduleSources() (values map[string]string, unknown []string) {
	var ctx *hcl.EvalContext
	for _, f := range e.files {
		c, _, _ := f.Body.PartialContent(earlyRootSchema)
		for _, b := range c.Blocks {
			if b.Type != "module" {
				continue
			}
			mc, _, _ := b.Body.PartialContent(earlyModuleSchema)
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

// moduleSources sets spec.ModuleSources, where the engine evaluates
// module sources early and the caller set none, to the values the
// unit's variables give the component's dynamic module sources
// (earlyInputs.moduleSources: the unit's Args, its TF_VAR_* and the
// process's, the component's and the generated variable files), so that
// the workdir holds the local module each selects. Where one cannot be
// evaluated, x.unknown says where and why (noted in the unit's log once
// it is open): it is left to the engine, which reports a module directory
// it cannot read.
func (x *unitRun) moduleSources(spec *workdir.Spec) {
	if !x.u.Args.early.Init || spec.ModuleSources != nil || !x.rs.hasDynamicSources(spec.Source) {
		x.sources = spec.ModuleSources
		return
	}
	e, err := sourceEarlyInputs(spec.Source, spec.Files, configRule(x.rs.eng.Kind), x.u)
	if err != nil {
		return // the workdir refuses the source by name
	}
	spec.ModuleSources, x.unknown = e.moduleSources()
	x.sources = spec.ModuleSources
}

// sourceEarlyInputs reads what early evaluation reads in the component
// source dir, before any workdir exists: its configuration files by rule,
// files (Spec.Files, generated) beside or in place of its own, and the
// values unit u gives its variables (its Args and Env, the process's
// TF_VAR_*).
func sourceEarlyInputs(dir string, files map[string][]byte, rule modtree.Files, u *Unit) (*earlyInputs, error) {
	overlay := map[string][]byte{}
	for n, b := range files {
		if !strings.Contains(n, "/") {
			overlay[n] = b
		}
	}
	cfs, err := configFiles(dir, overlay, rule)
	if err != nil {
		return nil, err
	}
	return newEarlyInputsFrom(cfs, dir, files, u.Args, unitEnv(processEnv(), nil, "", u.Env)), nil
}

// hasDynamicSources reports whether the root module at src calls a module
// whose source is an expression, walking it once per Run.
func (rs *runState) hasDynamicSources(src string) bool {
	if v, ok := rs.dynamic.Load(src); ok {
		return v.(bool)
	}
	root, _ := filepath.Abs(src)
	has := slices.ContainsFunc(modtree.Walk(src, configRule(rs.eng.Kind)).Calls, func(c modtree.Call) bool {
		return c.Parent == root && modtree.DynamicExpr(c.Source)
	})
	rs.dynamic.Store(src, has)
	return has
}

// walk walks the unit's module tree in its workdir, following the local
// modules its evaluated dynamic sources select, and notes in the unit's
// log each dynamic source that could not be evaluated.
func (x *unitRun) walk() {
	x.tree = modtree.WalkWith(x.dir, configRule(x.rs.eng.Kind), x.sources)
	for _, u := range x.unknown {
		x.out.note("modules: not evaluated, left to the engine (a local module outside the component is then not in the workdir): " + u)
	}
}
