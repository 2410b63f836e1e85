package tfbin

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Find is engine.Find for terraform: same result, same sentinel.
func TestFindDelegatesToEngine(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake terraform is a shell script")
	}
	dir := t.TempDir()
	want := filepath.Join(dir, "terraform")
	require.NoError(t, os.WriteFile(want, []byte("#!/bin/sh\necho fake\n"), 0o755))
	t.Setenv("PATH", dir)

	got, err := Find(context.Background(), "")
	require.NoError(t, err)
	require.Equal(t, want, got)

	t.Setenv("PATH", t.TempDir())
	_, err = Find(context.Background(), "")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.Equal(t, engine.TerraformRelease, Version.String())
}
