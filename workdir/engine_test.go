package workdir

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Under OpenTofu's rule a module called only from a .tofu file is part of
// the layout (its directory is copied at the same relative place), under
// terraform's it is not; switching an instance's engine rebuilds its
// layout; an unknown engine is refused by name.
func TestEngineLayoutFollowsTofuFiles(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/c/main.tf":  `resource "terraform_data" "x" {}`,
		"components/c/net.tofu": `module "net" { source = "../../modules/net" }`,
		"modules/net/main.tf":   `output "o" { value = "net" }`,
	})
	src := filepath.Join(base, "components", "c")
	m := newManager(t)

	w := prepare(t, m, Spec{Stack: "s", Instance: "tofu", Source: src, Engine: OpenTofu})
	require.FileExists(t, filepath.Join(w.Dir, "net.tofu"))
	require.FileExists(t, filepath.Join(w.Dir, "..", "..", "modules", "net", "main.tf"), "the module net.tofu calls is in the layout")
	require.NoError(t, w.Close())

	w = prepare(t, m, Spec{Stack: "s", Instance: "terraform", Source: src, Engine: Terraform})
	require.FileExists(t, filepath.Join(w.Dir, "net.tofu"), "every source file is copied")
	require.Equal(t, filepath.Join(w.Home, srcDir), w.Dir, "terraform reads no .tofu file: no module outside the component")
	require.NoError(t, w.Close())

	// The same instance under the other engine.
	w = prepare(t, m, Spec{Stack: "s", Instance: "terraform", Source: src, Engine: OpenTofu})
	require.FileExists(t, filepath.Join(w.Dir, "..", "..", "modules", "net", "main.tf"))
	require.NoError(t, w.Close())
	w = prepare(t, m, Spec{Stack: "s", Instance: "terraform", Source: src})
	require.Equal(t, filepath.Join(w.Home, srcDir), w.Dir, "the empty Engine is terraform's")
	require.NoError(t, w.Close())

	_, err := m.Check(Spec{Stack: "s", Instance: "x", Source: src, Engine: "opentofu"})
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), `"opentofu"`)
}

// A local backend path declared in backend.tofu is the instance's own
// state under OpenTofu's rule: the component's file there is refused until
// adopted, the instance's state is never overwritten by a refresh, and
// Remove without force refuses to delete it.
func TestEngineTofuBackendPathIsInstanceState(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{
		"main.tf":            `resource "terraform_data" "a" {}`,
		"backend.tofu":       "terraform {\n  backend \"local\" { path = \"state/current.json\" }\n}",
		"state/current.json": stateWith2,
	})
	m := newManager(t)
	ctx := context.Background()
	s := Spec{Stack: "s", Instance: "i", Source: src, Engine: OpenTofu}
	_, err := m.Prepare(ctx, s)
	require.ErrorIs(t, err, ErrSourceState, "the component holds state with resources at backend.tofu's path")

	s.AdoptState = true
	w := prepare(t, m, s)
	require.NoError(t, w.Close())
	own := `{"version":4,"serial":9,"lineage":"src-lineage","resources":[{"mode":"managed","type":"terraform_data","name":"a"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(w.Dir, "state", "current.json"), []byte(own), 0o644))

	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" { input = 1 }`})
	w = prepare(t, m, s)
	b, err := os.ReadFile(filepath.Join(w.Dir, "state", "current.json"))
	require.NoError(t, err)
	require.Equal(t, own, string(b), "a refresh never copies the component's file over the instance's state")
	require.NoError(t, w.CheckState("default"))
	require.NoError(t, w.Close())

	err = m.Remove(ctx, "s", "i", false)
	require.ErrorIs(t, err, ErrHasState)
	require.Contains(t, err.Error(), filepath.Join("state", "current.json"))
	require.DirExists(t, w.Home)
}
