package workdir

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// A source file that changes while Prepare copies it, and changes back
// afterwards (git checkout, an editor's undo), must not leave the workdir
// holding the intermediate content behind a stamp that says "up to date".
func TestSourceChangedDuringCopyIsNotKept(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"a.tf": "# a\n", "b.tf": "# b v1\n"})
	bPath := filepath.Join(src, "b.tf")
	var mid bool
	m := newManager(t, withHook(func(p string) {
		if mid && filepath.Base(p) == "a.tf" {
			// a.tf is copied first (sorted); b.tf was hashed already and is
			// copied next, with this content.
			require.NoError(t, os.WriteFile(bPath, []byte("# b mid-edit\n"), 0o644))
		}
	}))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	mid = true
	w := prepare(t, m, s)
	mid = false
	require.Equal(t, "# b mid-edit\n", regularFiles(t, w.Dir)["b.tf"], "the copy took what the source held then")
	first := w.Digest
	require.NoError(t, w.Close())

	require.NoError(t, os.WriteFile(bPath, []byte("# b v1\n"), 0o644)) // back to what was hashed
	w = prepare(t, m, s)
	require.Equal(t, map[string]string{"a.tf": "# a\n", "b.tf": "# b v1\n"}, regularFiles(t, w.Dir))
	require.NotEqual(t, first, w.Digest, "the digest describes what was written, not what was hashed")
	require.NoError(t, w.Close())

	// And the stamp now matches: the next Prepare copies nothing.
	n := 0
	m.hook = func(string) { n++ }
	w = prepare(t, m, s)
	require.Zero(t, n)
}

// grownRepo is a component whose layout grows when it starts calling a
// module outside its directory.
func grownRepo(t *testing.T, backend string) (base, src string) {
	t.Helper()
	base = t.TempDir()
	src = filepath.Join(base, "components", "c")
	testenv.WriteTree(t, base, map[string]string{
		"components/c/main.tf":    `resource "terraform_data" "x" {}`,
		"components/c/backend.tf": backend,
		"modules/m/main.tf":       `output "o" { value = 1 }`,
	})
	return base, src
}

func grow(t *testing.T, base string) {
	t.Helper()
	testenv.WriteTree(t, base, map[string]string{"components/c/main.tf": "resource \"terraform_data\" \"x\" {}\nmodule \"m\" {\n  source = \"../../modules/m\"\n}\n"})
}

func shrink(t *testing.T, base string) {
	t.Helper()
	testenv.WriteTree(t, base, map[string]string{"components/c/main.tf": `resource "terraform_data" "x" {}`})
}

// Everything the instance owns follows the component when the layout
// grows, and back when it shrinks: state at a custom backend path,
// custom-named state, a workspace_dir, plans, the lock file, whatever a
// run wrote.
func TestLayoutChangeMovesAllInstanceData(t *testing.T) {
	base, src := grownRepo(t, `
terraform {
  backend "local" {
    path          = "state/terraform.tfstate"
    workspace_dir = "envs"
  }
}`)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"gen.auto.tfvars.json": []byte("{}")}}
	w := prepare(t, m, s)
	require.Equal(t, filepath.Join(w.Home, "src"), w.Dir)
	owned := map[string]string{
		"state/terraform.tfstate":                 `{"resources":[{}]}`,
		"state/terraform.tfstate.backup":          `{"resources":[]}`,
		"envs/blue/terraform.tfstate":             `{"resources":[{}]}`,
		"prod.tfstate":                            `{"resources":[{}]}`,
		"terraform.tfstate.d/x/terraform.tfstate": "ws",
		".terraform.lock.hcl":                     "# lock",
		"out/p.tfplan":                            "plan",
		"notes/run.log":                           "written by a run",
	}
	testenv.WriteTree(t, w.Dir, owned)
	require.NoError(t, w.Close())

	grow(t, base)
	w = prepare(t, m, s)
	require.Equal(t, filepath.Join(w.Home, "src", "components", "c"), w.Dir)
	got := regularFiles(t, w.Dir)
	for k, v := range owned {
		require.Equal(t, v, got[k], k)
	}
	require.Equal(t, []string{"components", "modules"}, dirNames(t, filepath.Join(w.Home, "src")), "nothing left at the old position")
	require.NoError(t, w.Close())

	shrink(t, base)
	w = prepare(t, m, s)
	require.Equal(t, filepath.Join(w.Home, "src"), w.Dir)
	got = regularFiles(t, w.Dir)
	for k, v := range owned {
		require.Equal(t, v, got[k], k)
	}
	require.NoDirExists(t, filepath.Join(w.Dir, "components"))
	require.NoDirExists(t, filepath.Join(w.Dir, "modules"))
}

// State the backend keeps outside the component's directory moves too.
func TestLayoutChangeMovesStateOutsideComponent(t *testing.T) {
	base, src := grownRepo(t, `
terraform {
  backend "local" {
    path = "../outside/terraform.tfstate"
  }
}`)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	testenv.WriteTree(t, w.Home, map[string]string{"outside/terraform.tfstate": "state"}) // src/../outside
	require.NoError(t, w.Close())

	grow(t, base)
	w = prepare(t, m, s)
	b, err := os.ReadFile(filepath.Join(w.Dir, "..", "outside", "terraform.tfstate"))
	require.NoError(t, err)
	require.Equal(t, "state", string(b))
	require.NoDirExists(t, filepath.Join(w.Home, "outside"))
}

// Data that cannot follow without replacing something stops the refresh
// with an error naming both places; nothing is overwritten.
func TestLayoutChangeRefusesToOverwrite(t *testing.T) {
	base, src := grownRepo(t, "# no backend")
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	testenv.WriteTree(t, w.Dir, map[string]string{"prod.tfstate": "old position"})
	// Something already at the new position (as if left by an earlier,
	// different layout).
	testenv.WriteTree(t, w.Dir, map[string]string{"components/c/prod.tfstate": "new position"})
	require.NoError(t, w.Close())

	grow(t, base)
	_, err := m.Prepare(context.Background(), s)
	require.ErrorIs(t, err, ErrLeftBehind)
	require.Contains(t, err.Error(), filepath.Join(w.Home, "src", "prod.tfstate"))
	require.Contains(t, err.Error(), filepath.Join(w.Home, "src", "components", "c", "prod.tfstate"))
	require.Equal(t, map[string]string{"prod.tfstate": "old position", "components/c/prod.tfstate": "new position"},
		filterState(regularFiles(t, filepath.Join(w.Home, "src"))))

	// Once resolved by hand, the next Prepare finishes the move.
	require.NoError(t, os.Remove(filepath.Join(w.Home, "src", "components", "c", "prod.tfstate")))
	w = prepare(t, m, s)
	require.Equal(t, map[string]string{"prod.tfstate": "old position"}, filterState(regularFiles(t, w.Dir)))
}

func filterState(files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if stateLike(filepath.Base(k)) {
			out[k] = v
		}
	}
	return out
}

// The instance's lock file follows the source's: seeded, replaced when
// the source's changes, dropped when the source drops it; a lock file the
// source never had (terraform init or the runner wrote it) is kept.
func TestLockFileFollowsSource(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": "# v1", ".terraform.lock.hcl": "# seed v1\n"})
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	lock := func(w *Workdir) (string, bool) {
		b, err := os.ReadFile(filepath.Join(w.Dir, ".terraform.lock.hcl"))
		if os.IsNotExist(err) {
			return "", false
		}
		require.NoError(t, err)
		return string(b), true
	}
	w := prepare(t, m, s)
	got, ok := lock(w)
	require.True(t, ok)
	require.Equal(t, "# seed v1\n", got)
	// terraform init adds hashes: the instance's copy differs from the seed.
	testenv.WriteTree(t, w.Dir, map[string]string{".terraform.lock.hcl": "# seed v1 + hashes\n"})
	require.NoError(t, w.Close())

	testenv.WriteTree(t, src, map[string]string{"main.tf": "# v2"})
	w = prepare(t, m, s)
	got, _ = lock(w)
	require.Equal(t, "# seed v1 + hashes\n", got, "an unchanged seed does not replace the instance's lock file")
	require.NoError(t, w.Close())

	testenv.WriteTree(t, src, map[string]string{".terraform.lock.hcl": "# seed v2\n"})
	w = prepare(t, m, s)
	got, _ = lock(w)
	require.Equal(t, "# seed v2\n", got, "a changed seed replaces it")
	require.NoError(t, w.Close())

	require.NoError(t, os.Remove(filepath.Join(src, ".terraform.lock.hcl")))
	w = prepare(t, m, s)
	_, ok = lock(w)
	require.False(t, ok, "the source dropped its lock file: the stale pin goes too")
	// Now the runner (or terraform init) writes one; it is the instance's.
	testenv.WriteTree(t, w.Dir, map[string]string{".terraform.lock.hcl": "# written by the runner\n"})
	require.NoError(t, w.Close())

	for _, v := range []string{"# v3", "# v4"} {
		testenv.WriteTree(t, src, map[string]string{"main.tf": v})
		w = prepare(t, m, s)
		got, ok = lock(w)
		require.True(t, ok)
		require.Equal(t, "# written by the runner\n", got, "kept across refreshes")
		require.NoError(t, w.Close())
	}
}
