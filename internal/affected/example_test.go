package affected_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/affected"
)

// Two components, one calling a shared module: a change to the module
// affects only the unit that reaches it.
func ExampleUnits() {
	repo, err := os.MkdirTemp("", "affected")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(repo)
	for name, body := range map[string]string{
		"components/app/main.tf": `module "net" { source = "../../modules/net" }`,
		"components/db/main.tf":  `resource "terraform_data" "x" {}`,
		"modules/net/main.tf":    `output "o" { value = 1 }`,
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			panic(err)
		}
	}
	units := []affected.Unit{
		{ID: "prod/app", Source: filepath.Join(repo, "components/app")},
		{ID: "prod/db", Source: filepath.Join(repo, "components/db")},
	}
	fmt.Println(affected.Units(units, repo, []string{"modules/net/main.tf"}))
	// Output: [prod/app]
}
