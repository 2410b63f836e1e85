package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// requireNoHome checks that a refused cold Prepare left nothing of the
// instance: no home and no build in the root's scratch dir.
func requireNoHome(t *testing.T, m *Manager, stack, instance string) {
	t.Helper()
	home, err := m.Home(stack, instance)
	require.NoError(t, err)
	require.NoDirExists(t, home)
	for _, p := range listDir(t, m.Root()) {
		require.False(t, strings.HasPrefix(p, tmpDir+"/"), "a build was left in the scratch dir: %s", p)
	}
}

// TestPrepareBudget (issue 22 item 9): a source set over the
// materialization budget (too many files, too many bytes) fails Prepare
// with ErrBudget naming the file where the budget ran out, before
// anything of the instance is written; a refresh over the budget leaves
// the home as it was; a set exactly at the budget is prepared.
func TestPrepareBudget(t *testing.T) {
	ctx := context.Background()
	t.Run("files", func(t *testing.T) {
		src := t.TempDir()
		tree := map[string]string{"main.tf": `resource "terraform_data" "x" {}`}
		for i := range 9 {
			tree[fmt.Sprintf("files/%d.txt", i)] = "x"
		}
		testenv.WriteTree(t, src, tree)
		prepare(t, newManager(t, WithBudget(1<<20, 10)), Spec{Stack: "s", Instance: "at-limit", Source: src})

		testenv.WriteTree(t, src, map[string]string{"files/9.txt": "one too many"})
		m := newManager(t, WithBudget(1<<20, 10))
		_, err := m.Prepare(ctx, Spec{Stack: "s", Instance: "i", Source: src})
		require.ErrorIs(t, err, ErrBudget)
		require.ErrorContains(t, err, "more than 10 files")
		require.ErrorContains(t, err, src+string(filepath.Separator))
		require.ErrorContains(t, err, "WithBudget")
		requireNoHome(t, m, "s", "i")
	})
	t.Run("bytes", func(t *testing.T) {
		src := t.TempDir()
		testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
		big := filepath.Join(src, "lambda.zip")
		require.NoError(t, os.WriteFile(big, make([]byte, 2<<20), 0o644))
		m := newManager(t, WithBudget(1<<20, 100))
		_, err := m.Prepare(ctx, Spec{Stack: "s", Instance: "i", Source: src})
		require.ErrorIs(t, err, ErrBudget)
		require.ErrorContains(t, err, big+" (2097152 bytes)")
		require.ErrorContains(t, err, "more than 1048576 bytes")
		requireNoHome(t, m, "s", "i")
	})
	t.Run("refresh over the budget", func(t *testing.T) {
		src := t.TempDir()
		testenv.WriteTree(t, src, component)
		m := newManager(t, WithBudget(1<<20, 20))
		w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
		require.NoError(t, w.Close())
		before := snapshot(t, w.Home)
		tree := map[string]string{}
		for i := range 30 {
			tree[fmt.Sprintf("vendored/%d.tf", i)] = "# vendored"
		}
		testenv.WriteTree(t, src, tree)
		_, err := m.Prepare(ctx, Spec{Stack: "s", Instance: "i", Source: src})
		require.ErrorIs(t, err, ErrBudget)
		require.Equal(t, before, snapshot(t, w.Home), "a refused refresh writes nothing")
		// The lock was released: with a larger budget the refresh goes on.
		m2, err := New(m.Root(), WithBudget(1<<20, 100))
		require.NoError(t, err)
		prepare(t, m2, Spec{Stack: "s", Instance: "i", Source: src})
	})
	t.Run("bad option", func(t *testing.T) {
		for _, lim := range [][2]int64{{0, 1}, {1, 0}, {-1, 5}} {
			_, err := New(filepath.Join(t.TempDir(), "root"), WithBudget(lim[0], int(lim[1])))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, "WithBudget")
		}
	})
}
