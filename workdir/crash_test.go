package workdir

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func sourceFiles(version string, n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%02d.tf", i)] = fmt.Sprintf("# %s file %d\n", version, i)
	}
	return files
}

// TestKilledMidMaterializeIsRepaired SIGKILLs a child process in the middle
// of building a workdir (cold) and of refreshing one (in place), then checks
// that the next Prepare produces exactly the source, keeping instance data.
func TestKilledMidMaterializeIsRepaired(t *testing.T) {
	for _, cold := range []bool{true, false} {
		t.Run(map[bool]string{true: "cold", false: "refresh"}[cold], func(t *testing.T) {
			src := t.TempDir()
			v1 := sourceFiles("v1", 20)
			v1["sub/gone.tf"] = "# removed in v2"
			testenv.WriteTree(t, src, v1)
			root := filepath.Join(t.TempDir(), "root")
			s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-5", Source: src}
			m, err := New(root)
			require.NoError(t, err)
			want := v1
			if !cold {
				w := prepare(t, m, s)
				testenv.WriteTree(t, w.Dir, map[string]string{"terraform.tfstate": "state"})
				require.NoError(t, w.Close())
				v2 := sourceFiles("v2", 25)
				testenv.WriteTree(t, src, v2)
				require.NoError(t, removeAndPrune(src, "sub/gone.tf"))
				want = v2
				want["terraform.tfstate"] = "state"
			}

			kid := startChild(t, "crash", root, s, "CHILD_STALL_AFTER=7")
			kid.Expect(t, "stalled")
			require.Error(t, kid.Kill()) // SIGKILL on Unix

			if cold {
				require.NoDirExists(t, filepath.Join(root, mustID(t, s)), "a killed cold build never shows up as a home")
			} else {
				st := readStamp(filepath.Join(root, mustID(t, s)))
				require.NotNil(t, st)
				require.False(t, st.Complete, "the killed refresh left its stamp incomplete")
				// What a kill inside a file copy (before its rename) leaves.
				testenv.WriteTree(t, filepath.Join(root, mustID(t, s), srcDir), map[string]string{tmpPrefix + "123": "half a file"})
			}

			w := prepare(t, m, s)
			require.Equal(t, want, regularFiles(t, w.Dir))
			require.NoDirExists(t, filepath.Join(root, tmpDir, w.ID), "scratch is swept")
			require.True(t, readStamp(w.Home).Complete)
		})
	}
}

func mustID(t *testing.T, s Spec) string {
	t.Helper()
	id, err := ID(s.Stack, s.Instance)
	require.NoError(t, err)
	return id
}

// A refresh whose context is cancelled half-way returns the context error,
// releases the lock, and the next Prepare finishes the job.
func TestCanceledRefreshIsFinishedLater(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, sourceFiles("v1", 10))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	m := newManager(t, withHook(func(string) {
		if n++; n == 13 { // 10 files in the cold build, then 3 into the refresh
			cancel()
		}
	}))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w, err := m.Prepare(ctx, s)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	v2 := sourceFiles("v2", 10)
	testenv.WriteTree(t, src, v2)
	_, err = m.Prepare(ctx, s)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, readStamp(w.Home).Complete)

	w = prepare(t, m, s) // the lock was released, the stamp says "redo"
	require.Equal(t, v2, regularFiles(t, w.Dir))
}
