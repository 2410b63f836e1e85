package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// writeScript writes an executable shell script named name into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("fake engines are shell scripts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

func TestFindOnPath(t *testing.T) {
	for _, k := range []engine.Kind{engine.Terraform, engine.OpenTofu} {
		t.Run(string(k), func(t *testing.T) {
			dir := t.TempDir()
			want := writeScript(t, dir, k.Executable(), "echo fake")
			// The other engine on PATH too: Find must not confuse them.
			other := engine.OpenTofu
			if k == engine.OpenTofu {
				other = engine.Terraform
			}
			writeScript(t, dir, other.Executable(), "echo other")
			t.Setenv("PATH", dir)

			got, err := engine.Find(context.Background(), k, t.TempDir())
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// PATH wins over a finished install in the install dir.
func TestFindPrefersPath(t *testing.T) {
	onPath := writeScript(t, t.TempDir(), "terraform", "echo fake")
	installDir := t.TempDir()
	writeScript(t, filepath.Join(installDir, engine.TerraformRelease), "terraform", "echo installed")
	t.Setenv("PATH", filepath.Dir(onPath))

	got, err := engine.Find(context.Background(), engine.Terraform, installDir)
	require.NoError(t, err)
	require.Equal(t, onPath, got)
}

// A finished install in the install dir is used as is: no lock wait, no
// download. A temp dir left by an install that was killed is not mistaken
// for one.
func TestFindReusesFinishedInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	installDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(installDir, ".tmp-install-dead"), 0o755))
	want := writeScript(t, filepath.Join(installDir, engine.TerraformRelease), "terraform", "echo installed")

	got, err := engine.Find(context.Background(), engine.Terraform, installDir)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestFindNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())

	_, err := engine.Find(context.Background(), engine.Terraform, "")
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.Contains(t, err.Error(), "terraform is not on PATH")

	// installDir is no help for OpenTofu: the error says how to get it.
	_, err = engine.Find(context.Background(), engine.OpenTofu, t.TempDir())
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.Contains(t, err.Error(), "tofu is not on PATH")
	require.Contains(t, err.Error(), "go build ./cmd/tofu")
}

func TestFindUnknownKind(t *testing.T) {
	_, err := engine.Find(context.Background(), engine.Kind("terragrunt"), "")
	require.ErrorIs(t, err, engine.ErrUnknownKind)
	require.Contains(t, err.Error(), `"terragrunt"`)
}

// A done context ends Find before anything is looked up or installed, and
// publishes nothing in the install dir.
func TestFindCanceled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	installDir := filepath.Join(t.TempDir(), "tf")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, k := range []engine.Kind{engine.Terraform, engine.OpenTofu} {
		_, err := engine.Find(ctx, k, installDir)
		require.ErrorIs(t, err, context.Canceled, k)
	}
	_, err := os.Stat(installDir)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Waiting for another process's install lock is bounded by the context:
// Find gives up with the context's error instead of blocking, and publishes
// nothing.
func TestFindInstallLockWaitBounded(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	installDir := t.TempDir()
	release := lockFile(t, filepath.Join(installDir, ".install.lock"))
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := engine.Find(ctx, engine.Terraform, installDir)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = os.Stat(filepath.Join(installDir, engine.TerraformRelease))
	require.ErrorIs(t, err, os.ErrNotExist)
}
