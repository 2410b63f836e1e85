package earlyeval_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// A component picks its network module with a variable: the unit's
// value selects the module, and a source built with a function is left
// to the engine, with where and why.
func ExampleInputs_ModuleSources() {
	dir, err := os.MkdirTemp("", "earlyeval")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	main := `
variable "flavor" { default = "small" }
module "net" { source = "../../modules/net-${var.flavor}" }
module "dns" { source = lower("../../modules/DNS") }
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		panic(err)
	}
	in, err := earlyeval.FromSource(dir, nil, modtree.TerraformFiles, earlyeval.Given{Vars: map[string]string{"flavor": "large"}})
	if err != nil {
		panic(err)
	}
	values, unknown := in.ModuleSources()
	fmt.Println(values["net"])
	fmt.Println(len(unknown), "left to the engine")
	// Output:
	// ../../modules/net-large
	// 1 left to the engine
}
