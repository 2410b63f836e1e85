package modtree

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// DynamicExpr reports whether s, a module call's source or version as the
// walk reads it, is the text of an expression over input variables,
// locals or path attributes (early evaluation: OpenTofu 1.8, Terraform
// 1.15) rather than a literal value: terraform-config-inspect hands such
// expressions back as written. s is dynamic when it parses, whole, as one
// HCL expression that refers to var.NAME, local.NAME or path.NAME
// ("${path.module}/../modules/net" names a local directory, but only once
// evaluated), or calls a function. A literal source never does: registry addresses parse as
// divisions of bare names, and URLs and paths do not parse at all.
func DynamicExpr(s string) bool {
	if s == "" {
		return false
	}
	e, diags := hclsyntax.ParseExpression([]byte(s), "", hcl.InitialPos)
	if diags.HasErrors() {
		return false
	}
	for _, t := range e.Variables() {
		if len(t) >= 2 && (t.RootName() == "var" || t.RootName() == "local" || t.RootName() == "path") {
			return true
		}
	}
	calls := false
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		_, ok := n.(*hclsyntax.FunctionCallExpr)
		calls = calls || ok
		return nil
	})
	return calls
}
