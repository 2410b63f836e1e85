package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestSourceLockFileOutsideConstraints: a lock file committed in the
// component that pins a version its constraints exclude fails the unit
// with an error that names the workdir's lock file and the way out;
// Args.Upgrade chooses versions again.
func TestSourceLockFileOutsideConstraints(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "pinned", itemComponent)
	pin := `provider "` + testprovider.Source + `" {
  version     = "0.9.0"
  constraints = ">= 1.0.0"
  hashes = [
    "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
  ]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(src, lockFileName), []byte(pin), 0o644))
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "pinned", src, files(t, map[string]any{"name": "p"}, filepath.Join(w.dir, "p.tfstate")))}
	rep, err := w.runner(t).Run(testCtx(t), Apply, u)
	require.Error(t, err)
	require.Equal(t, Failed, rep.Results[0].Status)
	home, herr := w.wd.Home("plat-ue2-dev", "pinned")
	require.NoError(t, herr)
	require.ErrorContains(t, err, filepath.Join(home, "src"))
	require.ErrorContains(t, err, lockFileName)
	require.ErrorContains(t, err, "Args.Upgrade")
	require.ErrorContains(t, err, "0.9.0")

	u.Args.Upgrade = true
	rep, err = w.runner(t).Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.Contains(t, string(lockFileOf(t, w, "plat-ue2-dev", "pinned")), `version     = "1.0.0"`)
	b, err := os.ReadFile(filepath.Join(src, lockFileName))
	require.NoError(t, err)
	require.Equal(t, pin, string(b), "the source is never written")
}

// TestRunDirsOfDeadRunnersSwept: a Run removes the private dirs that
// runners which died left in the temp dir, and only those.
func TestRunDirsOfDeadRunnersSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, runDirPrefix+"dead")
	live := filepath.Join(tmp, runDirPrefix+"live")
	for _, d := range []string{dead, live} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "cli-1.tfrc"), []byte("{}"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dead, runDirLock), nil, 0o644))
	lk := flock.New(filepath.Join(live, runDirLock)) // a runner still at work
	require.NoError(t, lk.Lock())
	t.Cleanup(func() { _ = lk.Unlock() })

	w := newWorld(t)
	src := w.component(t, "plain", `output "o" { value = 1 }`)
	_, err := w.runner(t).Run(testCtx(t), Apply, Unit{Workdir: workdirSpec("s", "sweep", src, nil)})
	require.NoError(t, err)
	require.NoDirExists(t, dead)
	require.DirExists(t, live)
	left, err := filepath.Glob(filepath.Join(tmp, runDirPrefix+"*"))
	require.NoError(t, err)
	require.Equal(t, []string{live}, left, "the Run removed its own dir too")
}
