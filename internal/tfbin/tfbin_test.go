package tfbin

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTerraform writes an executable named terraform into dir.
func fakeTerraform(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, binName())
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho fake\n"), 0o755))
	return p
}

func TestFindPrefersPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake terraform is a shell script")
	}
	onPath := fakeTerraform(t, t.TempDir())
	installDir := t.TempDir()
	fakeTerraform(t, filepath.Join(installDir, Version.String()))
	t.Setenv("PATH", filepath.Dir(onPath))

	got, err := Find(context.Background(), installDir)
	require.NoError(t, err)
	require.Equal(t, onPath, got)
}

// A finished install in the install dir is used as is: no lock wait, no
// download. A temp dir left by an install that was killed is not mistaken
// for one.
func TestFindReusesFinishedInstall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake terraform is a shell script")
	}
	t.Setenv("PATH", t.TempDir())
	installDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(installDir, ".tmp-install-dead"), 0o755))
	want := fakeTerraform(t, filepath.Join(installDir, Version.String()))

	got, err := Find(context.Background(), installDir)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestFindWithoutPathOrInstallDir(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find(context.Background(), "")
	require.ErrorIs(t, err, ErrNotFound)
}

// A cancelled context ends the install attempt with an error naming the
// install dir, and publishes nothing there.
func TestFindInstallCanceled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	installDir := filepath.Join(t.TempDir(), "tf")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Find(ctx, installDir)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), installDir)
	_, err = os.Stat(filepath.Join(installDir, Version.String()))
	require.ErrorIs(t, err, os.ErrNotExist)
}
