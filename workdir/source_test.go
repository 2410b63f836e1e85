package workdir

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// State left in the source by someone who ran terraform there is never
// copied (and said so, once per Prepare), and the instance's own state of
// the same names is never overwritten or deleted by a refresh. (The
// backend's own places hold states without resources here: with
// resources, Prepare refuses; see TestSourceStateRefusedUntilAdopted.)
func TestSourceStateIsNeverCopied(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{
		"main.tf": `resource "terraform_data" "x" {}`,
		"backend.tf": `
terraform {
  backend "local" {
    path          = "state/current.json"
    workspace_dir = "envs"
  }
}`,
		"prod.tfstate":               `{"resources":[{"source":"someone's"}]}`,
		"prod.tfstate.backup":        `{"resources":[{"source":"someone's"}]}`,
		"state/current.json":         `{"version":4,"lineage":"someone's","resources":[]}`,
		"state/current.json.backup":  `{"resources":[{"source":"someone's"}]}`,
		"state/README.md":            "not state",
		"envs/blue/current.json":     `{"version":4,"lineage":"someone's","resources":[]}`,
		"terraform.tfstate.d/x/s":    "ws",
		"sub/terraform.tfstate":      "nested",
		"sub/old.tfstate.1700000000": "timestamped backup",
	})
	rec := &recorder{}
	m := newManager(t, WithLogger(slog.New(rec)))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	require.Equal(t, map[string]string{
		"main.tf":         `resource "terraform_data" "x" {}`,
		"backend.tf":      regularFiles(t, src)["backend.tf"],
		"state/README.md": "not state",
	}, regularFiles(t, w.Dir))
	logs := rec.find("source holds local state")
	require.Len(t, logs, 1, "said once per Prepare")
	require.Equal(t, "INFO", logs[0]["level"])
	for _, f := range []string{"prod.tfstate", "prod.tfstate.backup", "state/current.json", "state/current.json.backup", "envs", "terraform.tfstate.d", "sub/terraform.tfstate", "sub/old.tfstate.1700000000"} {
		require.Contains(t, logs[0]["files"], filepath.Join(src, filepath.FromSlash(f)))
	}

	// The instance's own state under the same names.
	own := map[string]string{
		"prod.tfstate":           `{"resources":[{"source":"instance"}]}`,
		"state/current.json":     `{"resources":[{"source":"instance"}]}`,
		"envs/blue/current.json": `{"resources":[{"source":"instance"}]}`,
	}
	testenv.WriteTree(t, w.Dir, own)
	require.NoError(t, w.Close())

	// The source's state changes, then goes; a refresh happens each time.
	for i, change := range []func(){
		func() {
			testenv.WriteTree(t, src, map[string]string{"prod.tfstate": `{"resources":[]}`, "state/current.json": "{}", "main.tf": "# v2"})
		},
		func() {
			for _, f := range []string{"prod.tfstate", "state/current.json", "envs/blue/current.json"} {
				require.NoError(t, os.Remove(filepath.Join(src, filepath.FromSlash(f))))
			}
			testenv.WriteTree(t, src, map[string]string{"main.tf": "# v3"})
		},
	} {
		change()
		rec.reset()
		w = prepare(t, m, s)
		got := regularFiles(t, w.Dir)
		for k, v := range own {
			require.Equal(t, v, got[k], "step %d: %s", i, k)
		}
		require.NoError(t, w.Close())
	}
}

// A symlink loop in the source ends; the rest is still copied.
func TestSymlinkLoopInSource(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": "# x", "sub/a.tf": "# a"})
	require.NoError(t, os.Symlink("..", filepath.Join(src, "sub", "up")))
	require.NoError(t, os.Symlink(".", filepath.Join(src, "self")))
	rec := &recorder{}
	m := newManager(t, WithLogger(slog.New(rec)))
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	require.Equal(t, map[string]string{"main.tf": "# x", "sub/a.tf": "# a"}, regularFiles(t, w.Dir))
	logs := rec.find("symlinked directories not followed")
	require.Len(t, logs, 1)
	require.Contains(t, logs[0]["dirs"], filepath.Join(src, "self"))
}

// A workdir root reached through a symlink inside a local module's
// directory is never copied into the instances.
func TestRootInsideModuleDirIsNotCopied(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/c/main.tf": `module "all" { source = "../.." }`, // the whole repo is a module
		"main.tf":              `output "o" { value = 1 }`,
	})
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(base, "work")))
	m, err := New(filepath.Join(outside, "root"))
	require.NoError(t, err)
	src := filepath.Join(base, "components", "c")
	for _, inst := range []string{"a", "b"} {
		w, err := m.Prepare(context.Background(), Spec{Stack: "s", Instance: inst, Source: src})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"components/c/main.tf": `module "all" { source = "../.." }`, "main.tf": `output "o" { value = 1 }`},
			regularFiles(t, filepath.Join(w.Home, "src")), "instance %s holds no other instance", inst)
		require.NoError(t, w.Close())
	}
}
