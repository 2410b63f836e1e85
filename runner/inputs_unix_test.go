//go:build unix

package runner

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFIFOInputFileRefused: a var file or a -backend-config file that is
// a FIFO fails its unit with ErrInvalidUnit naming the file, before any
// read of it (the skip-unchanged digest, the backend fingerprint) could
// block under the instance lock; the other unit of the Run succeeds.
func TestFIFOInputFileRefused(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "id" { value = "x-1" }`)
	fifo := filepath.Join(t.TempDir(), "vars.tfvars")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	tf, _ := fakeTerraform(t, fakeTerraformBody)
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithSkipUnchanged())
	require.NoError(t, err)
	for _, args := range []Args{{VarFiles: []string{fifo}}, {BackendConfig: []string{fifo}}} {
		rep, err := r.Run(testCtx(t), Apply,
			Unit{Workdir: workdirSpec("plat-ue2-dev", "fifo", src, nil), Args: args},
			Unit{Workdir: workdirSpec("plat-ue2-dev", "fine", src, nil)})
		require.ErrorIs(t, err, ErrInvalidUnit)
		require.ErrorContains(t, err, fifo)
		require.ErrorContains(t, err, "not a regular file")
		for _, res := range rep.Results {
			if res.Unit == "plat-ue2-dev/fine" {
				require.Equal(t, Succeeded, res.Status)
			}
		}
	}
}
