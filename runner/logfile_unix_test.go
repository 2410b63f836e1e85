//go:build unix

package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/workdir"
)

// TestLogNeverFollowsPlantedLink (issue 22 item 4): a symlink planted at
// a unit's predictable log name in the log dir is replaced, never
// followed: its target is neither truncated nor written, and the log is a
// regular file, 0600. A log dir others can write is refused by name
// before any log is written in it.
func TestLogNeverFollowsPlantedLink(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "component")
	writeTestFile(t, filepath.Join(src, "main.tf"), `resource "terraform_data" "x" {}`)
	tf, _ := fakeTerraform(t, "echo validated\nexit 0\n")
	wd, err := workdir.New(filepath.Join(dir, "workdirs"))
	require.NoError(t, err)
	u := Unit{ID: "plat-ue2-dev/db", Workdir: workdirSpec("plat-ue2-dev", "db", src, nil)}

	logs := filepath.Join(dir, "logs")
	require.NoError(t, os.Mkdir(logs, 0o700))
	target := filepath.Join(dir, "victim.txt")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	require.NoError(t, os.Symlink(target, filepath.Join(logs, logName(u.ID, Validate.String()))))
	r, err := New(WithWorkdirs(wd), WithTerraform(tf), WithModuleStore("-"), WithLogDir(logs))
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), Validate, u)
	require.NoError(t, err)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "keep me", string(b), "the link's target is never written")
	fi, err := os.Lstat(rep.Results[0].Log)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Contains(t, readFile(t, rep.Results[0].Log), "validated")

	shared := filepath.Join(dir, "shared-logs")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chmod(shared, 0o777))
	r, err = New(WithWorkdirs(wd), WithTerraform(tf), WithModuleStore("-"), WithLogDir(shared))
	require.NoError(t, err)
	_, err = r.Run(testCtx(t), Validate, u)
	require.ErrorIs(t, err, ErrBadOption)
	require.ErrorContains(t, err, shared+" (owner uid ")
	entries, err := os.ReadDir(shared)
	require.NoError(t, err)
	require.Empty(t, entries, "no log in a dir others can write")
}
