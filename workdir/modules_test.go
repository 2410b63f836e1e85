package workdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// repo is a monorepo where the component reaches two local modules.
var repo = map[string]string{
	"components/elasticache/main.tf": `
module "redis" {
  source = "../../modules/redis"
}
module "remote" {
  source = "git::https://example.invalid/x.git"
}
output "name" { value = module.redis.name }
`,
	"modules/redis/main.tf": `
module "common" {
  source = "../common"
}
output "name" { value = module.common.prefix }
`,
	"modules/redis/templates/x.tpl": "template",
	"modules/common/main.tf":        `output "prefix" { value = "redis" }`,
	"components/other/main.tf":      "# not needed",
	"modules/unused/main.tf":        "# not needed",
	"README.md":                     "# not needed",
}

func TestLocalModulesKeepRelativePositions(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, repo)
	src := filepath.Join(base, "components", "elasticache")
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})

	require.Equal(t, filepath.Join(w.Home, "src", "components", "elasticache"), w.Dir)
	got := regularFiles(t, filepath.Join(w.Home, "src"))
	require.Equal(t, map[string]string{
		"components/elasticache/main.tf": repo["components/elasticache/main.tf"],
		"modules/redis/main.tf":          repo["modules/redis/main.tf"],
		"modules/redis/templates/x.tpl":  repo["modules/redis/templates/x.tpl"],
		"modules/common/main.tf":         repo["modules/common/main.tf"],
	}, got)

	// A change in a module (not in the component) is a source change too.
	testenv.WriteTree(t, base, map[string]string{"modules/common/main.tf": `output "prefix" { value = "v2" }`})
	require.NoError(t, w.Close())
	w = prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	b, err := os.ReadFile(filepath.Join(w.Home, "src", "modules", "common", "main.tf"))
	require.NoError(t, err)
	require.Equal(t, `output "prefix" { value = "v2" }`, string(b))
}

// When a local module further up appears, the component moves inside the
// layout; its state and lock file must move with it.
func TestLayoutChangeMovesInstanceData(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, repo)
	src := filepath.Join(base, "components", "elasticache")
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	require.Equal(t, filepath.Join(w.Home, "src"), w.Dir)
	owned := map[string]string{"terraform.tfstate": `{"resources":[{}]}`, ".terraform.lock.hcl": "# lock", "p.tfplan": "plan"}
	testenv.WriteTree(t, w.Dir, owned)
	require.NoError(t, w.Close())

	testenv.WriteTree(t, base, map[string]string{"components/elasticache/main.tf": repo["components/elasticache/main.tf"]})
	w = prepare(t, m, s)
	require.Equal(t, filepath.Join(w.Home, "src", "components", "elasticache"), w.Dir)
	got := regularFiles(t, w.Dir)
	for k, v := range owned {
		require.Equal(t, v, got[k], k)
	}
	require.Equal(t, []string{"components", "modules"}, dirNames(t, filepath.Join(w.Home, "src")), "nothing left at the old position")
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A symlinked component dir (or module dir) is read through the link and
// laid out at the link's position.
func TestSymlinkedSource(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, repo)
	link := filepath.Join(t.TempDir(), "elasticache-link")
	require.NoError(t, os.Symlink(filepath.Join(base, "components", "elasticache"), link))
	testenv.WriteTree(t, base, map[string]string{"components/elasticache/main.tf": `resource "terraform_data" "x" {}`})
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: link})
	require.Equal(t, map[string]string{"main.tf": `resource "terraform_data" "x" {}`}, regularFiles(t, w.Dir))
}

// A module source that is an expression is followed with the value
// Spec.ModuleSources gives it: the module it selects, outside the
// component, is in the workdir at the same relative position, and
// another value re-prepares the workdir with the other module (and
// without the first). A value for a name that is not a module name, or
// an empty value, is refused as invalid before anything is written.
func TestPrepareFollowsModuleSources(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/app/main.tf": `module "net" { source = "../../modules/${var.net}" }` + "\n",
		"modules/blue/main.tf":   `output "x" { value = "blue" }`,
		"modules/green/main.tf":  `output "x" { value = "green" }`,
	})
	src := filepath.Join(base, "components", "app")
	m := newManager(t)
	files := func(w *Workdir) map[string]string {
		t.Helper()
		got := regularFiles(t, filepath.Join(w.Home, "src"))
		delete(got, "components/app/main.tf")
		return got
	}

	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	require.Equal(t, filepath.Join(w.Home, "src"), w.Dir, "no value: the component alone")
	require.NoError(t, w.Close())

	w = prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: map[string]string{"net": "../../modules/blue"}})
	require.Equal(t, filepath.Join(w.Home, "src", "components", "app"), w.Dir)
	require.Equal(t, map[string]string{"modules/blue/main.tf": `output "x" { value = "blue" }`}, files(w))
	require.NoError(t, w.Close())

	w = prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: map[string]string{"net": "../../modules/green"}})
	require.Equal(t, map[string]string{"modules/green/main.tf": `output "x" { value = "green" }`}, files(w), "another value, the other module")
	require.NoError(t, w.Close())

	for _, bad := range []map[string]string{{"a b": "./x"}, {"net": ""}} {
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "j", Source: src, ModuleSources: bad})
		require.ErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), "module source")
		home, err := m.Home("s", "j")
		require.NoError(t, err)
		_, err = os.Stat(home)
		require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
	}
}
