package modtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func keys(calls []Call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.Key)
	}
	return out
}

func call(t *testing.T, tr *Tree, key string) Call {
	t.Helper()
	for _, c := range tr.Calls {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("no call %q in %v", key, keys(tr.Calls))
	return Call{}
}

func TestIsLocal(t *testing.T) {
	for src, want := range map[string]bool{
		"./a":                               true,
		"../../modules/redis":               true,
		"./":                                true,
		"..":                                false, // terraform needs the slash
		".":                                 false,
		"modules/a":                         false,
		"/abs/path":                         false,
		"hashicorp/consul/aws":              false,
		"git::https://example.invalid/x":    false,
		"git::https://example.invalid/x//m": false,
		"":                                  false,
	} {
		require.Equal(t, want, IsLocal(src), src)
	}
}

func TestWalkNested(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"c/main.tf": `
module "a" { source = "../modules/a" }
module "r" {
  source  = "registry.invalid/ns/name/aws"
  version = "~> 1.2"
}
module "g" { source = "git::https://example.invalid/x.git?ref=v1" }
terraform {
  required_providers {
    tfitest = { source = "example.invalid/ns/tfitest", version = ">= 1.0" }
  }
}`,
		"modules/a/main.tf": `
module "b" { source = "./b" }
module "shared" { source = "../shared" }`,
		"modules/a/b/main.tf":    `module "shared" { source = "../../shared" }`,
		"modules/shared/main.tf": `output "x" { value = 1 }`,
		"modules/unused/main.tf": `# never called`,
	})
	root := filepath.Join(base, "c")
	tr := Walk(root, TerraformFiles)
	require.NoError(t, tr.Err())
	require.Equal(t, root, tr.Root)
	require.Equal(t, []string{"a", "a.b", "a.b.shared", "a.shared", "g", "r"}, keys(tr.Calls))

	r := call(t, tr, "r")
	require.Equal(t, Call{Key: "r", Name: "r", Source: "registry.invalid/ns/name/aws", Version: "~> 1.2", Parent: root}, r)
	require.False(t, call(t, tr, "g").Local)
	require.Empty(t, call(t, tr, "g").Dir)

	ab := call(t, tr, "a.b")
	require.True(t, ab.Local)
	require.Equal(t, filepath.Join(base, "modules", "a", "b"), ab.Dir)
	require.Equal(t, filepath.Join(base, "modules", "a"), ab.Parent)
	shared := filepath.Join(base, "modules", "shared")
	require.Equal(t, shared, call(t, tr, "a.shared").Dir)
	require.Equal(t, shared, call(t, tr, "a.b.shared").Dir, "two instances of one directory")

	require.Equal(t, []string{root, filepath.Join(base, "modules", "a"), filepath.Join(base, "modules", "a", "b"), shared}, sortedCopy(tr.LocalDirs()))
	require.Len(t, tr.Modules, 4, "each directory once")
	rm := tr.Modules[root]
	require.NotNil(t, rm.Config)
	require.Equal(t, []string{">= 1.0"}, rm.Config.RequiredProviders["tfitest"].VersionConstraints)
	require.Equal(t, "example.invalid/ns/tfitest", rm.Config.RequiredProviders["tfitest"].Source)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestWalkCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		link  [2]string // optional symlink: path -> target
		cycle string
		calls []string
	}{
		{"self", map[string]string{"c/main.tf": `module "me" { source = "./" }`}, [2]string{}, "me", []string{"me"}},
		{"pair", map[string]string{
			"c/main.tf": `module "a" { source = "../a" }`,
			"a/main.tf": `module "b" { source = "../b" }`,
			"b/main.tf": `module "a" { source = "../a" }`,
		}, [2]string{}, "a.b.a", []string{"a", "a.b", "a.b.a"}},
		{"symlink loop", map[string]string{
			"c/main.tf":   `module "m" { source = "./m" }`,
			"c/m/main.tf": `module "again" { source = "./loop" }`,
		}, [2]string{"c/m/loop", "."}, "m.again", []string{"m", "m.again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			testenv.WriteTree(t, base, tc.files)
			if tc.link[0] != "" {
				require.NoError(t, os.Symlink(tc.link[1], filepath.Join(base, tc.link[0])))
			}
			tr := Walk(filepath.Join(base, "c"), TerraformFiles)
			require.Equal(t, tc.calls, keys(tr.Calls))
			c := call(t, tr, tc.cycle)
			require.True(t, c.Cycle)
			require.ErrorIs(t, tr.Err(), ErrCycle)
			require.Contains(t, tr.Err().Error(), tc.cycle)
		})
	}
}

// A module directory reached through a symlink keeps its path as reached
// and is parsed once however it is reached.
func TestWalkSymlinkedModuleDir(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"c/main.tf": `
module "x" { source = "./modules/x" }
module "y" { source = "../shared-modules/x" }`,
		"shared-modules/x/main.tf":      `module "common" { source = "../common" }`,
		"shared-modules/common/main.tf": `output "o" { value = 1 }`,
	})
	require.NoError(t, os.Symlink("../shared-modules", filepath.Join(base, "c", "modules")))
	root := filepath.Join(base, "c")
	tr := Walk(root, TerraformFiles)
	require.NoError(t, tr.Err())
	viaLink := filepath.Join(root, "modules", "x")
	require.Equal(t, viaLink, call(t, tr, "x").Dir)
	require.Equal(t, filepath.Join(root, "modules", "common"), call(t, tr, "x.common").Dir, "lexical, as terraform resolves it")
	real, err := filepath.EvalSymlinks(filepath.Join(base, "shared-modules", "x"))
	require.NoError(t, err)
	require.Equal(t, real, tr.Modules[viaLink].Resolved)
	direct := filepath.Join(base, "shared-modules", "x")
	require.Same(t, tr.Modules[viaLink].Config, tr.Modules[direct].Config, "one parse per real directory")
	require.Contains(t, tr.LocalDirs(), viaLink)
	require.Contains(t, tr.LocalDirs(), direct)
}

// Parse errors are recorded and what parsed is still followed; a missing
// local directory is recorded and the walk goes on.
func TestWalkErrorsAreRecorded(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"c/broken.tf": `resource "x" {`,
		"c/main.tf": `
module "ok" { source = "../ok" }
module "gone" { source = "../gone" }`,
		"ok/main.tf":        `module "deeper" { source = "./deeper" }`,
		"ok/deeper/main.tf": `output "o" { value = 1 }`,
	})
	root := filepath.Join(base, "c")
	tr := Walk(root, TerraformFiles)
	require.Equal(t, []string{"gone", "ok", "ok.deeper"}, keys(tr.Calls))
	require.ErrorIs(t, tr.Modules[root].Err, ErrParse)
	require.NotNil(t, tr.Modules[root].Config)
	gone := filepath.Join(base, "gone")
	require.ErrorIs(t, tr.Modules[gone].Err, ErrMissing)
	require.Nil(t, tr.Modules[gone].Config)
	require.NotContains(t, tr.LocalDirs(), gone)
	require.Contains(t, tr.LocalDirs(), filepath.Join(base, "ok", "deeper"))
	err := tr.Err()
	require.ErrorIs(t, err, ErrParse)
	require.ErrorIs(t, err, ErrMissing)
	require.Contains(t, err.Error(), gone)
	require.Contains(t, err.Error(), "broken.tf")

	// A missing root is recorded the same way.
	tr = Walk(filepath.Join(base, "nope"), TerraformFiles)
	require.Empty(t, tr.Calls)
	require.ErrorIs(t, tr.Err(), ErrMissing)
	require.Empty(t, tr.LocalDirs())
}

// WalkWith follows a dynamic source of the root module whose value it is
// given like a literal local call (a module outside the component
// included), keeps the expression's text, leaves a dynamic call it has no
// value for unfollowed, and never applies a value to a child module's
// call of the same name.
func TestWalkWithSources(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/app/main.tf": `
module "net" { source = "../../modules/${var.net}" }
module "db" { source = "../../modules/${var.db}" }
module "inner" { source = "./inner" }`,
		"components/app/inner/main.tf": `module "net" { source = "../../../modules/${var.net}" }`,
		"modules/blue/main.tf":         `module "leaf" { source = "./leaf" }`,
		"modules/blue/leaf/main.tf":    `output "x" { value = 1 }`,
		"modules/green/main.tf":        `output "x" { value = 2 }`,
	})
	root := filepath.Join(base, "components", "app")
	plain := Walk(root, TerraformFiles)
	require.Equal(t, []string{root, filepath.Join(root, "inner")}, plain.LocalDirs(), "no values: dynamic calls are not followed")

	tr := WalkWith(root, TerraformFiles, map[string]string{"net": "../../modules/blue"})
	require.NoError(t, tr.Err())
	net := call(t, tr, "net")
	require.True(t, net.Dynamic)
	require.True(t, net.Local)
	require.Equal(t, "../../modules/blue", net.Source)
	require.Equal(t, `"../../modules/${var.net}"`, net.SourceExpr)
	require.Equal(t, filepath.Join(base, "modules", "blue"), net.Dir)
	require.Equal(t, []string{root, filepath.Join(root, "inner"), filepath.Join(base, "modules", "blue"), filepath.Join(base, "modules", "blue", "leaf")},
		sortedCopy(tr.LocalDirs()), "the selected module and what it calls")
	db := call(t, tr, "db")
	require.True(t, db.Dynamic)
	require.False(t, db.Local, "no value for it")
	require.Empty(t, db.SourceExpr)
	innerNet := call(t, tr, "inner.net")
	require.False(t, innerNet.Local, "a child module's call is not the root module's")
	require.Equal(t, `"../../../modules/${var.net}"`, innerNet.Source)

	remote := WalkWith(root, TerraformFiles, map[string]string{"net": "registry.invalid/ns/net/aws"})
	require.False(t, call(t, remote, "net").Local, "a value that is not a local path is not followed")
}
