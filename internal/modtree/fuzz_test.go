package modtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// stacksComponent is a Terraform Stacks file: terraform ignores it in a
// root module, and terraform-config-inspect panics on it ("unhandled
// block type") when it is handed one.
const stacksComponent = `component "c" {
  source = "./"
}
`

// TestStacksFilesIgnored: *.tfcomponent.hcl and *.tfstack.hcl beside a
// module's .tf files are not module files; the walk reads the module as
// terraform does, and finds its calls.
func TestStacksFilesIgnored(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"root/main.tf":              `module "net" { source = "../net" }`,
		"root/app.tfcomponent.hcl":  stacksComponent,
		"root/deploy.tfstack.hcl":   `deployment "d" { inputs = {} }`,
		"net/main.tf":               `output "id" { value = 1 }`,
		"net/other.tfcomponent.hcl": stacksComponent,
	})
	for _, files := range []Files{TerraformFiles, TofuFiles} {
		tr := Walk(filepath.Join(dir, "root"), files)
		require.NoError(t, tr.Err())
		require.Equal(t, []string{"net"}, keys(tr.Calls))
	}
}

// FuzzWalk feeds malformed HCL and JSON to the walk, as a module's files
// and as a Stacks file beside them: it never panics, and every module it
// reached either parsed or says why not.
func FuzzWalk(f *testing.F) {
	for _, s := range []string{
		stacksComponent,
		`module "m" { source = "./m" }`,
		`module "m" { source = "./m" version = }`,
		`terraform { backend "s3" { bucket = "b" } }`,
		`resource "a" "b" { for_each = {} dynamic "x" {} }`,
		`{"module": {"m": {"source": "./m"}}}`,
		`{"terraform": [1, 2]}`,
		"\x00\xff{",
		`component "c" {`,
		`removed { from = a.b lifecycle { destroy = false } }`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, tf, other string) {
		dir := t.TempDir()
		testenv.WriteTree(t, dir, map[string]string{
			"root/main.tf":           tf,
			"root/extra.tf.json":     other,
			"root/x.tfcomponent.hcl": other,
			"root/m/main.tf":         other,
		})
		for _, files := range []Files{TerraformFiles, TofuFiles} {
			tr := Walk(filepath.Join(dir, "root"), files)
			for d, m := range tr.Modules {
				require.True(t, m.Err != nil || m.Config != nil, "module %s: neither parsed nor an error", d)
			}
			_ = tr.Err()
		}
		_, err := os.Stat(filepath.Join(dir, "root", "main.tf"))
		require.NoError(t, err, "the walk only reads")
	})
}
