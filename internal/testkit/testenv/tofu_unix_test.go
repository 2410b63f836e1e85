//go:build unix

package testenv_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Tofu builds (or finds) OpenTofu in the per-machine cache, and the binary
// there is the pinned release; no temp dir is left beside it.
func TestTofu(t *testing.T) {
	p := testenv.Tofu(t)
	dir, err := testenv.TofuCacheDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, engine.OpenTofu.Executable()), p)

	info, err := engine.Detect(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, engine.OpenTofu, info.Kind)
	require.Equal(t, testenv.TofuVersion, info.Version.String())
	requireNoTemp(t, dir)

	require.Equal(t, p, testenv.Tofu(t), "a second call returns the same binary")
	got, err := testenv.EnsureTofu(context.Background())
	require.NoError(t, err)
	require.Equal(t, p, got, "EnsureTofu, for programs, uses the same cache")
}

// A finished binary is used as is, with no lock wait and no build; a temp
// dir left by a killed build is not mistaken for one.
func TestBuildTofuReusesFinished(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake binary is a shell script")
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".tmp-build-dead"), 0o755))
	want := filepath.Join(dir, "tofu")
	require.NoError(t, os.WriteFile(want, []byte("#!/bin/sh\necho 'OpenTofu v1.10.6'\n"), 0o755))

	got, err := testenv.BuildTofu(context.Background(), dir, func(string) { t.Error("built although a finished binary was there") })
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// Waiting for another process's build is bounded by the context, and a
// build that gave up publishes nothing.
func TestBuildTofuLockWaitBounded(t *testing.T) {
	dir := t.TempDir()
	lk := flock.New(filepath.Join(dir, ".build.lock"))
	ok, err := lk.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	defer lk.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = testenv.BuildTofu(ctx, dir, func(string) { t.Error("built without the lock") })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), lk.Path())
	_, err = os.Stat(filepath.Join(dir, "tofu"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A build killed while `go build` runs (the go command and its compilers
// with it) leaves only its temp dir: no binary a later run would use. The
// next build removes the leftover and publishes a complete, working binary.
func TestBuildTofuKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds OpenTofu twice (a minute or more even with a warm Go build cache)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("kills a process group")
	}
	testenv.Tofu(t) // skip unless OpenTofu can be built here at all; warms the Go build cache
	dir := t.TempDir()

	// The child builds in a process group of its own, so that a kill
	// reaches the go command and its compilers too.
	c := childproc.Start(t, "build-tofu", childproc.WithEnv(buildDirEnv+"="+dir),
		childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}))
	killed := false
	// childproc's own cleanup, which runs after this one, kills and reaps
	// only the child itself: this one reaches the rest of its group.
	t.Cleanup(func() {
		if !killed {
			_ = syscall.Kill(-c.PID(), syscall.SIGKILL)
		}
	})

	// The child says where it builds once `go build` runs.
	var tmp string
	for {
		l, ok := c.ReadLine()
		if !ok {
			break
		}
		if s, found := strings.CutPrefix(l, "building in "); found {
			tmp = s
			break
		}
	}
	require.NotEmpty(t, tmp, "the helper never started a build")
	require.NoError(t, syscall.Kill(-c.PID(), syscall.SIGKILL))
	killed = true
	err := c.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the helper was killed: %v", err)

	_, err = os.Stat(filepath.Join(dir, "tofu"))
	require.ErrorIs(t, err, os.ErrNotExist, "a killed build published a binary")
	_, err = os.Stat(tmp)
	require.NoError(t, err, "the killed build's temp dir is left behind")

	var tmp2 string
	p, err := testenv.BuildTofu(context.Background(), dir, func(s string) { tmp2 = s })
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "tofu"), p)
	require.NotEqual(t, tmp, tmp2)
	info, err := engine.Detect(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, engine.OpenTofu, info.Kind)
	require.Equal(t, testenv.TofuVersion, info.Version.String())
	requireNoTemp(t, dir)
}

func requireNoTemp(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, ".tmp-build-*"))
	require.NoError(t, err)
	require.Empty(t, left)
}
