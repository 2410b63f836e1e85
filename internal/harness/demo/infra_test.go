package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// WriteInfra lays out every component, rewrites a file only when its
// content differs, and puts back what was changed.
func TestWriteInfra(t *testing.T) {
	dir := t.TempDir()
	src, err := WriteInfra(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, filepath.FromSlash(Component)), src)
	for _, c := range []string{Component, VPCComponent, OnlineComponent, "modules/redis-cluster"} {
		require.FileExists(t, filepath.Join(dir, filepath.FromSlash(c), "main.tf"), c)
	}

	kept := filepath.Join(dir, filepath.FromSlash(VPCComponent), "main.tf")
	changed := filepath.Join(src, "network.tf")
	before, err := os.Stat(kept)
	require.NoError(t, err)
	want, err := os.ReadFile(changed)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(changed, []byte("# edited\n"), 0o644))

	_, err = WriteInfra(dir)
	require.NoError(t, err)
	after, err := os.Stat(kept)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "an unchanged file was rewritten")
	got, err := os.ReadFile(changed)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func TestOfflineSource(t *testing.T) {
	o := &Offline{Infra: "/infra"}
	require.Equal(t, filepath.Join("/infra", "components", "terraform", "vpc"), o.Source(VPCComponent))
}
