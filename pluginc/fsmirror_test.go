package pluginc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

func testProvider(t testing.TB) Provider {
	p, err := ParseProvider(testprovider.Source)
	require.NoError(t, err)
	return p
}

func TestFilesystemMirrorEnsure(t *testing.T) {
	bin := testprovider.Build(t)
	mirror := t.TempDir()
	zips := testprovider.WriteFilesystemMirror(t, mirror, bin, "1.0.0", "1.1.0", "2.0.0")
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(mirror)))
	require.NoError(t, err)
	p := testProvider(t)

	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Len(t, pkgs, 1)
	pkg := pkgs[0]
	require.Equal(t, "1.1.0", pkg.Version)
	require.Equal(t, testprovider.Platform, pkg.Platform)
	require.Equal(t, "~> 1.0", pkg.Constraints)
	require.Equal(t, filepath.Join(c.PackagesDir(), testprovider.Host, testprovider.Namespace, testprovider.Type, "1.1.0", testprovider.Platform), pkg.Dir)
	fi, err := os.Stat(filepath.Join(pkg.Dir, testprovider.ExecutableName("1.1.0")))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o100, "provider must stay executable")

	wantH1, err := dirhash.HashZip(zips[1], dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, []string{wantH1}, pkg.Hashes)
	require.Equal(t, Stats{Downloads: 1, Bytes: fileSize(t, zips[1])}, c.Stats())

	// A second Ensure, even from a fresh Cache, is a hit.
	c2, err := Open(c.Dir(), WithSource(FilesystemMirror(mirror)))
	require.NoError(t, err)
	again, err := c2.Ensure(context.Background(), Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Equal(t, pkgs, again)
	require.Equal(t, Stats{Hits: 1}, c2.Stats())

	// Nothing is left in the temp dir.
	ents, err := os.ReadDir(filepath.Join(c.Dir(), stateDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, ents)
}

func TestEnsureNoMatchingVersion(t *testing.T) {
	bin := testprovider.Build(t)
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, bin, "1.0.0", "1.1.0")
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(mirror)))
	require.NoError(t, err)
	_, err = c.Ensure(context.Background(), Requirement{Provider: testProvider(t), Constraints: ">= 2.0"})
	require.ErrorIs(t, err, ErrNoMatchingVersion)
	require.ErrorContains(t, err, "available versions: 1.1.0, 1.0.0")
	require.ErrorContains(t, err, testprovider.Source)
	requireEmptyCache(t, c)
}

func TestEnsureLocked(t *testing.T) {
	bin := testprovider.Build(t)
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, bin, "1.0.0", "1.1.0")
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(mirror)))
	require.NoError(t, err)
	p := testProvider(t)
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: p, Constraints: "~> 1.0", Locked: "1.0.0"})
	require.NoError(t, err)
	require.Equal(t, "1.0.0", pkgs[0].Version)

	_, err = c.Ensure(context.Background(), Requirement{Provider: p, Constraints: "~> 1.1", Locked: "1.0.0"})
	require.ErrorIs(t, err, ErrLockedVersion)
	_, err = c.Ensure(context.Background(), Requirement{Provider: p, Locked: "1.5.0"})
	require.ErrorIs(t, err, ErrLockedVersion)
	require.ErrorContains(t, err, "available versions: 1.1.0, 1.0.0")
}

func fileSize(t testing.TB, p string) int64 {
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Size()
}

// requireEmptyCache asserts that no package and no temp file is in the cache.
func requireEmptyCache(t testing.TB, c *Cache) {
	t.Helper()
	ents, err := os.ReadDir(c.Dir())
	require.NoError(t, err)
	for _, e := range ents {
		require.Equal(t, stateDir, e.Name(), "unexpected entry in the cache")
	}
	tmp, err := os.ReadDir(filepath.Join(c.Dir(), stateDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "temp files left behind")
	require.Empty(t, c.cachedProviders())
}
