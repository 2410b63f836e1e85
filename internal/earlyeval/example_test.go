package earlyeval_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// A component picks its network module with a const variable: under
// Terraform 1.15's rule the unit's value selects the module, a function
// the engine has included, and a source that reads a variable that is
// not const is left to the engine (which refuses it), with where and
// why.
func ExampleInputs_ModuleSources() {
	dir, err := os.MkdirTemp("", "earlyeval")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	main := `
variable "flavor" {
  default = "small"
  const   = true
}
variable "zone" { default = "dns" }
module "net" { source = "../../modules/net-${lower(var.flavor)}" }
module "dns" { source = "../../modules/${var.zone}" }
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		panic(err)
	}
	in, err := earlyeval.FromSource(dir, nil, modtree.TerraformFiles, earlyeval.Given{Vars: map[string]string{"flavor": "LARGE"}})
	if err != nil {
		panic(err)
	}
	tf115 := engine.Info{Kind: engine.Terraform, Version: version.Must(version.NewVersion("1.15.0"))}
	values, unknown := in.ModuleSources(earlyeval.RulesOf(tf115))
	fmt.Println(values["net"])
	fmt.Println(unknown[0])
	// Output:
	// ../../modules/net-large
	// main.tf:8: module "dns" source: var.zone is not const: Terraform evaluates only literal values and const variables (const = true) during init
}
