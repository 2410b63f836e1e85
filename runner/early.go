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

// OpenTofu's early evaluation (1.8): a backend block, a module's source
// and version may be built from input variables and locals, evaluated
// at init. The runner then gives init and get the unit's variables, and
// what init depends on includes the values those expressions read. The
// runner does not evaluate the expressions itself: it follows their
// references (locals transitively) to the variables, and takes each
// variable's declaration default and the value the unit gives it, with
// terraform's precedence (TF_VAR_NAME, terraform.tfvars,
// terraform.tfvars.json, *.auto.tfvars[.json] in name order, Args.VarFiles
// in order, Args.Vars), as text. Two ways of writing one value (a -var
// and the same string in a var file) count as a change: init runs once
// more, and a backend counts as changed.

// earlyEvalSince is the first OpenTofu version that evaluates variables
// in backend blocks and module sources, and takes -var and -var-file at
// init and get.
var earlyEvalSince = version.Must(version.NewVersion("1.8.0"))

// earlyEvaluation reports whether engine e evaluates variables early.
func earlyEvaluation(e engine.Info) bool {
	return e.Kind == engine.OpenTofu && e.Version != nil && e.Version.Core().GreaterThanOrEqual(earlyEvalSince)
}

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
		out[i].Args.initVars = earlyEvaluation(e)
	}
	return out
}

// earlyInputs is what early evaluation reads in a root module: the
// variables' defaults and the locals as written, and the values the unit
// gives its variables.
type earlyInputs struct {
	files    []*hcl.File
	defaults map[string]string         // variable -> its default's text ("" when it has none)
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
	e := &earlyInputs{defaults: map[string]string{}, declared: map[string]bool{}, locals: map[string]hcl.Expression{},
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
	slices.Sort(auto)
	varFiles := append([]string{filepath.Join(dir, "terraform.tfvars"), filepath.Join(dir, "terraform.tfvars.json")}, auto...)
	for _, f := range a.VarFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		varFiles = append(varFiles, f)
	}
	for _, path := range varFiles {
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
