package earlyeval

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Given is what a unit gives its root module's variables, besides the
// variable files the engine loads by itself.
type Given struct {
	// Vars are the -var NAME=VALUE pairs (highest precedence).
	Vars map[string]string
	// VarFiles are the -var-file paths, in order; a relative one is
	// relative to the directory the engine runs in.
	VarFiles []string
	// Env is the environment the engine runs with; only its TF_VAR_*
	// are read.
	Env map[string]string
}

// Inputs is what early evaluation reads in a root module: the
// variables' defaults and the locals as written, and the values the unit
// gives its variables, read once by New.
type Inputs struct {
	dir      string            // where the engine runs: file() reads relative to it
	overlay  map[string][]byte // generated files standing in dir (slash paths), read before dir's own
	files    []*hcl.File
	defaults map[string]string         // variable -> its default's text ("" when it has none)
	defExprs map[string]hcl.Expression // variable -> its default
	declared map[string]bool           // variables the module declares
	decls    map[string]varDecl        // variable -> what its block says besides its default
	locals   map[string]hcl.Expression // local -> its expression
	localSrc map[string]string         // local -> its expression's text
	values   map[string]string         // variable -> the value the unit gives it, tagged by kind
	inFile   map[string]bool           // variable -> its value is a var file's (an HCL value, never parsed again)
}

var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "module", LabelNames: []string{"name"}},
	}}
	terraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
	}}
	variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "default"}, {Name: "type"}, {Name: "const"}, {Name: "sensitive"}, {Name: "ephemeral"},
	}}
	moduleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}}}
)

// New reads the root module's configuration files (the ones its engine
// reads: modtree.ReadConfig) and the values g gives its variables. dir
// is the directory the engine runs in (its terraform.tfvars,
// *.auto.tfvars and relative var files); overlay, for a component not
// yet prepared, holds the generated files (workdir.Spec.Files) that
// stand in dir beside, or in place of, the component's own (nil once the
// workdir holds them).
func New(files []modtree.ConfigFile, dir string, overlay map[string][]byte, g Given) *Inputs {
	e := &Inputs{dir: dir, overlay: overlay, defaults: map[string]string{}, defExprs: map[string]hcl.Expression{}, declared: map[string]bool{}, decls: map[string]varDecl{},
		locals: map[string]hcl.Expression{}, localSrc: map[string]string{}, values: map[string]string{}, inFile: map[string]bool{}}
	p := hclparse.NewParser()
	for _, cf := range files {
		f := parseConfig(p, cf.Name, cf.Data)
		if f == nil {
			continue
		}
		e.files = append(e.files, f)
		c, _, _ := f.Body.PartialContent(rootSchema)
		for _, b := range c.Blocks {
			switch b.Type {
			case "variable":
				n := b.Labels[0]
				e.declared[n] = true
				vc, _, _ := b.Body.PartialContent(variableSchema)
				if d, ok := vc.Attributes["default"]; ok {
					e.defaults[n] = exprText(f, d.Expr)
					e.defExprs[n] = d.Expr
				}
				e.decls[n] = declOf(vc.Attributes)
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
	for k, v := range g.Env {
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
	for _, f := range g.VarFiles {
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
	for _, n := range slices.Sorted(maps.Keys(g.Vars)) {
		e.values[n] = "s:" + g.Vars[n]
		delete(e.inFile, n)
	}
	return e
}

// FromSource is New for the component source dir, before any workdir
// exists: its configuration files by rule, with files (Spec.Files,
// generated) beside or in place of its own. An error is the source's
// (a missing dir, a file that cannot be read).
func FromSource(dir string, files map[string][]byte, rule modtree.Files, g Given) (*Inputs, error) {
	overlay := map[string][]byte{}
	for n, b := range files {
		if !strings.Contains(n, "/") {
			overlay[n] = b
		}
	}
	cfs, err := modtree.ReadConfig(dir, overlay, rule)
	if err != nil {
		return nil, err
	}
	return New(cfs, dir, files, g), nil
}

// readVarFile takes the values a variable definitions file gives; a file
// that is missing or does not parse gives none (terraform reports it).
// Only a regular file is read: one swapped for a FIFO never blocks.
func (e *Inputs) readVarFile(path string) {
	b, err := modtree.ReadRegular(path)
	if err != nil {
		return
	}
	e.readVars(path, b)
}

// readVars takes the values of the variable definitions file path whose
// content is b.
func (e *Inputs) readVars(path string, b []byte) {
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
		e.inFile[n] = true
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
