//go:build unix

package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/workdir"
)

// TestEnginesGetTheirShareOfTheCores runs six units of a component with
// the test provider, six at a time, through an engine shim that notes
// each command's GOMAXPROCS and execs real terraform. Every init and
// apply of the Run gets a share of the host's cores: at least cores over
// the parallelism (rounded up), at most every core. A unit whose Env
// sets GOMAXPROCS runs with its own value.
func TestEnginesGetTheirShareOfTheCores(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "redis", itemComponent)
	log := filepath.Join(w.dir, "gomaxprocs.log")
	shim := filepath.Join(w.dir, "shim", "terraform")
	require.NoError(t, os.MkdirAll(filepath.Dir(shim), 0o755))
	script := fmt.Sprintf("#!/bin/sh\necho \"$1 ${GOMAXPROCS-unset} $TF_DATA_DIR\" >> %q\nexec %q \"$@\"\n", log, w.tf)
	require.NoError(t, os.WriteFile(shim, []byte(script), 0o755))

	const n = 6
	var units []Unit
	for i := range n {
		inst := fmt.Sprintf("redis-%02d", i)
		u := Unit{Workdir: workdir.Spec{Stack: "share", Instance: inst, Source: src,
			Files: files(t, map[string]any{"name": inst}, filepath.Join(w.dir, "states", inst+".tfstate"))}}
		if i == 0 {
			u.Env = map[string]string{"GOMAXPROCS": "3"}
		}
		units = append(units, u)
	}
	r := w.runner(t, WithTerraform(shim), WithParallelism(n))
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	for _, res := range rep.Results {
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
	}

	cores := runtime.GOMAXPROCS(0)
	least := (cores + n - 1) / n
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	seen := map[string]int{}
	for l := range strings.Lines(string(b)) {
		f := strings.Fields(l)
		if f[0] != "init" && f[0] != "apply" {
			continue // the engine's detection, not a unit's command
		}
		require.Len(t, f, 3, "line %q", l)
		seen[f[0]]++
		if strings.Contains(f[2], "share__redis-00") {
			require.Equal(t, "3", f[1], "the unit's own GOMAXPROCS: %q", l)
			continue
		}
		procs, err := strconv.Atoi(f[1])
		require.NoError(t, err, "line %q", l)
		require.True(t, procs >= least && procs <= cores, "GOMAXPROCS %d outside [%d, %d]: %q", procs, least, cores, l)
	}
	require.Equal(t, map[string]int{"init": n, "apply": n}, seen)
}
