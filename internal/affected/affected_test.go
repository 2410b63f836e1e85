package affected

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestUnits maps changed file paths to exactly the units that reach
// them through their component or local modules.
func TestUnits(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"components/app/main.tf":   `module "net" { source = "../../modules/net" }`,
		"components/db/main.tf":    `module "base" { source = "../../modules/base" }`,
		"components/web/main.tf":   `resource "terraform_data" "x" {}`,
		"modules/net/main.tf":      `module "base" { source = "../base" }`,
		"modules/base/main.tf":     `output "o" { value = 1 }`,
		"modules/unused/main.tf":   `output "o" { value = 1 }`,
		"vars/app-prod.tfvars":     `x = 1`,
		"components/web/README.md": `docs`,
	})
	units := []Unit{
		{ID: "app", Source: filepath.Join(repo, "components/app"), VarFiles: []string{filepath.Join(repo, "vars/app-prod.tfvars")}},
		{ID: "db", Source: filepath.Join(repo, "components/db")},
		{ID: "web", Source: filepath.Join(repo, "components/web")},
	}
	cases := []struct {
		paths []string
		want  []string
	}{
		{[]string{"modules/base/main.tf"}, []string{"app", "db"}}, // two levels down for app
		{[]string{"modules/net/main.tf"}, []string{"app"}},
		{[]string{"modules/unused/main.tf"}, nil},
		{[]string{"components/web/README.md"}, []string{"web"}},
		{[]string{"components/web/deleted.tf"}, []string{"web"}}, // a deleted file still counts
		{[]string{"vars/app-prod.tfvars"}, []string{"app"}},
		{[]string{"modules/base/main.tf", "components/web/main.tf"}, []string{"app", "db", "web"}},
		{[]string{filepath.Join(repo, "modules/net/main.tf")}, []string{"app"}}, // absolute
		{[]string{"components/webapp/main.tf"}, nil},                            // a sibling with a common prefix
		{nil, nil},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, Units(units, repo, tc.paths), "%v", tc.paths)
	}
}

// A file or a directory symlinked inside a component (which the workdir
// copies as what it points at) and an absolute -backend-config file map
// to the unit; a KEY=VALUE -backend-config does not.
func TestUnitsFollowLinksAndBackendConfig(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"components/app/main.tf":     `resource "terraform_data" "x" {}`,
		"components/other/main.tf":   `resource "terraform_data" "x" {}`,
		"shared/common.tf":           `locals { common = 1 }`,
		"shared/templates/user.tpl":  `hello`,
		"shared/unlinked.tf":         `locals { x = 1 }`,
		"backends/prod.s3.tfbackend": `bucket = "b"`,
	})
	require.NoError(t, os.Symlink("../../shared/common.tf", filepath.Join(repo, "components/app/common.tf")))
	require.NoError(t, os.Symlink("../../shared/templates", filepath.Join(repo, "components/app/templates")))
	units := []Unit{
		{ID: "app", Source: filepath.Join(repo, "components/app")},
		{ID: "other", Source: filepath.Join(repo, "components/other"),
			BackendConfig: []string{filepath.Join(repo, "backends/prod.s3.tfbackend"), "key=a/b"}},
	}
	for path, want := range map[string][]string{
		"shared/common.tf":           {"app"},
		"shared/templates/user.tpl":  {"app"},
		"shared/templates/new.tpl":   {"app"},
		"shared/unlinked.tf":         nil,
		"backends/prod.s3.tfbackend": {"other"},
	} {
		require.Equal(t, want, Units(units, repo, []string{path}), path)
	}
}

// There is no engine here: a module called only from a .tofu file
// counts, and so does a module called from a main.tf that main.tofu
// hides.
func TestUnitsTofuFiles(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"components/app/main.tf":     `module "old" { source = "../../modules/old" }`,
		"components/app/main.tofu":   `module "new" { source = "../../modules/new" }`,
		"components/app/net.tofu":    `module "net" { source = "../../modules/net" }`,
		"components/db/db.tofu.json": `{"module": {"base": {"source": "../../modules/base"}}}`,
		"modules/old/main.tf":        `output "o" { value = 1 }`,
		"modules/new/main.tf":        `output "o" { value = 1 }`,
		"modules/net/main.tofu":      `module "base" { source = "../base" }`,
		"modules/base/main.tf":       `output "o" { value = 1 }`,
		"modules/unused/main.tf":     `output "o" { value = 1 }`,
	})
	units := []Unit{
		{ID: "app", Source: filepath.Join(repo, "components/app")},
		{ID: "db", Source: filepath.Join(repo, "components/db")},
	}
	for path, want := range map[string][]string{
		"modules/net/main.tofu":  {"app"},
		"modules/new/main.tf":    {"app"},
		"modules/old/main.tf":    {"app"},
		"modules/base/main.tf":   {"app", "db"},
		"modules/unused/main.tf": nil,
	} {
		require.Equal(t, want, Units(units, repo, []string{path}), path)
	}
}

// A dynamic module source reaches the module the unit's values select:
// the caller's ModuleSources first, else what Evaluate gives, asked once
// per rule and only for a component that has dynamic sources. A source
// Evaluate cannot evaluate, or a component it cannot read, makes every
// change count.
func TestUnitsDynamicSources(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"components/app/main.tf":    `module "net" { source = "../../modules/${var.which}" }`,
		"components/static/main.tf": `module "net" { source = "../../modules/blue" }`,
		"modules/blue/main.tf":      `output "o" { value = 1 }`,
		"modules/green/main.tf":     `output "o" { value = 1 }`,
		"elsewhere/x.tf":            `output "o" { value = 1 }`,
	})
	app := filepath.Join(repo, "components/app")
	asked := map[string][]modtree.Files{}
	selects := func(id, which string, unknown []string, err error) Unit {
		return Unit{ID: id, Source: app, Evaluate: func(rule modtree.Files) (map[string]string, []string, error) {
			asked[id] = append(asked[id], rule)
			return map[string]string{"net": "../../modules/" + which}, unknown, err
		}}
	}
	units := []Unit{
		selects("blue", "blue", nil, nil),
		selects("green", "green", nil, nil),
		{ID: "given", Source: app, ModuleSources: map[string]string{"net": "../../modules/green"},
			Evaluate: func(modtree.Files) (map[string]string, []string, error) { panic("Evaluate with ModuleSources given") }},
		selects("unknown", "red", []string{`main.tf:1: module "other" source: ...`}, nil),
		selects("unreadable", "blue", nil, errors.New("no such dir")),
		{ID: "nil", Source: app},
		{ID: "static", Source: filepath.Join(repo, "components/static"),
			Evaluate: func(modtree.Files) (map[string]string, []string, error) { panic("Evaluate without dynamic sources") }},
	}
	for path, want := range map[string][]string{
		"modules/blue/main.tf":  {"blue", "unknown", "unreadable", "nil", "static"},
		"modules/green/main.tf": {"green", "given", "unknown", "unreadable", "nil"},
		"elsewhere/x.tf":        {"unknown", "unreadable", "nil"},
	} {
		clear(asked)
		require.Equal(t, want, Units(units, repo, []string{path}), path)
		require.Equal(t, []modtree.Files{modtree.TerraformFiles, modtree.TofuFiles}, asked["blue"])
		require.Equal(t, []modtree.Files{modtree.TerraformFiles}, asked["unreadable"], "an error ends the evaluation")
	}
	require.Empty(t, Units(units, repo, nil), "no change affects nothing")
}

// TestUnitsUnknownSourceKeepsItsOwnVerdict: two instances of one component
// whose known sources evaluate alike, one of them with a source that does
// not evaluate. Whichever comes first, the one that cannot be evaluated
// counts every change and the other only its own modules: the per-source
// verdict is never shared between them.
func TestUnitsUnknownSourceKeepsItsOwnVerdict(t *testing.T) {
	repo := t.TempDir()
	testenv.WriteTree(t, repo, map[string]string{
		"components/app/main.tf": `module "net" { source = "../../modules/${var.which}" }`,
		"modules/blue/main.tf":   `output "o" { value = 1 }`,
		"elsewhere/x.tf":         `output "o" { value = 1 }`,
	})
	app := filepath.Join(repo, "components/app")
	unit := func(id string, unknown []string) Unit {
		return Unit{ID: id, Source: app, Evaluate: func(modtree.Files) (map[string]string, []string, error) {
			return map[string]string{"net": "../../modules/blue"}, unknown, nil
		}}
	}
	known := unit("known", nil)
	unknown := unit("unknown", []string{`main.tf:2: module "other" source: ...`})
	for _, order := range [][]Unit{{known, unknown}, {unknown, known}} {
		require.Equal(t, []string{"unknown"}, Units(order, repo, []string{"elsewhere/x.tf"}), "%s first", order[0].ID)
		want := []string{order[0].ID, order[1].ID}
		require.Equal(t, want, Units(order, repo, []string{"modules/blue/main.tf"}), "%s first", order[0].ID)
	}
}
