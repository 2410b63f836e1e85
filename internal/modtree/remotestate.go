package modtree

import (
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

var dataSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "data", LabelNames: []string{"type", "name"}}}}

var remoteStateSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "backend"}, {Name: "config"}}}

// RemoteStatePaths returns the state files that the module in dir reads
// through `data "terraform_remote_state"` with backend "local": the
// config's path as written (terraform resolves it against the working
// directory, the root module's, wherever the block is), sorted and each
// once. Only literal strings are seen: a path built from a variable or
// from path.module is left out, and so are files that do not parse.
// Files are taken as ReadBackend takes them, by the engine's rule,
// without overlay.
func RemoteStatePaths(dir string, rule Files) ([]string, error) {
	files, err := ReadConfig(dir, nil, rule)
	if err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	seen := map[string]bool{}
	for _, cf := range files {
		f := parseFile(p, filepath.Join(dir, cf.Name), cf.Data)
		if f == nil {
			continue
		}
		c, _, _ := f.Body.PartialContent(dataSchema)
		for _, b := range c.Blocks {
			if b.Labels[0] != "terraform_remote_state" {
				continue
			}
			if path, ok := localRemoteStatePath(b.Body); ok {
				seen[path] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// localRemoteStatePath returns the literal config.path of a
// terraform_remote_state block whose backend is the literal "local".
func localRemoteStatePath(body hcl.Body) (string, bool) {
	attrs, _, _ := body.PartialContent(remoteStateSchema)
	be, ok := attrs.Attributes["backend"]
	if !ok || literalString(be.Expr) != "local" {
		return "", false
	}
	cfg, ok := attrs.Attributes["config"]
	if !ok {
		return "", false
	}
	pairs, diags := hcl.ExprMap(cfg.Expr)
	if diags.HasErrors() {
		return "", false
	}
	for _, kv := range pairs {
		if literalString(kv.Key) == "path" {
			p := literalString(kv.Value)
			return p, p != ""
		}
	}
	return "", false
}

// literalString is the value of e when it is a known string needing no
// evaluation context, "" otherwise.
func literalString(e hcl.Expression) string {
	v, diags := e.Value(nil)
	if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}
