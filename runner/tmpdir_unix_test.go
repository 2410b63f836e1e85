//go:build unix

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// tmpComponent's provisioner leaves a temp file behind, as a killed
// provider leaves its plugin socket, and says where it put it.
const tmpComponent = `
resource "terraform_data" "tmp" {
  provisioner "local-exec" {
    command = "mktemp > tmpfile-path"
  }
}
`

// TestEngineTempDirInRunArea runs an apply whose provisioner leaves a
// temp file, under both engines, with TMPDIR pointing at a dir of the
// test's: the file lands in the Run's private dir, and once the Run has
// returned, the user's TMPDIR holds nothing.
func TestEngineTempDirInRunArea(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		dir := t.TempDir()
		userTmp := filepath.Join(dir, "user-tmp")
		require.NoError(t, os.MkdirAll(userTmp, 0o700))
		t.Setenv("TMPDIR", userTmp)
		src := filepath.Join(dir, "src", "tmp")
		require.NoError(t, os.MkdirAll(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(tmpComponent), 0o644))
		wd, err := workdir.New(filepath.Join(dir, "workdirs"))
		require.NoError(t, err)
		r, err := New(WithWorkdirs(wd), WithTerraform(e.Path))
		require.NoError(t, err)
		u := Unit{Workdir: workdirSpec("plat-ue2-dev", "tmp", src, nil)}
		rep, err := r.Run(testCtx(t), Apply, u)
		require.NoError(t, err)

		w, err := wd.Prepare(testCtx(t), u.Workdir)
		require.NoError(t, err)
		left := strings.TrimSpace(readFile(t, filepath.Join(w.Dir, "tmpfile-path")))
		require.NoError(t, w.Close())
		require.True(t, strings.HasPrefix(left, filepath.Join(userTmp, runDirPrefix)), "the engine's temp file is at %s, outside the Run's dir", left)
		ents, err := os.ReadDir(userTmp)
		require.NoError(t, err)
		require.Empty(t, ents, "left in the user's TMPDIR after %s", rep.Results[0].Unit)
	})
}
