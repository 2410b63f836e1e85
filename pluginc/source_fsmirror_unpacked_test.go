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

// TestFilesystemMirrorUnpacked: a mirror in Terraform's unpacked layout
// (here another cache, HOST/NS/TYPE/VERSION/OS_ARCH/) installs like a
// packed one: same h1:, executables still executable, no zh: recorded for
// a zip nobody distributed, a hit the second time.
func TestFilesystemMirrorUnpacked(t *testing.T) {
	bin := testprovider.Build(t)
	packed := t.TempDir()
	zips := testprovider.WriteFilesystemMirror(t, packed, bin, "1.0.0", "1.1.0")
	first, err := Open(t.TempDir(), WithSource(FilesystemMirror(packed)))
	require.NoError(t, err)
	p := testProvider(t)
	ctx := context.Background()
	want, err := first.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)

	// The first cache is the second one's mirror.
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(first.PackagesDir())))
	require.NoError(t, err)
	got, err := c.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "1.1.0", got[0].Version)
	h1, err := dirhash.HashZip(zips[1], dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, []string{h1}, got[0].Hashes)
	require.Equal(t, want[0].Hashes, got[0].Hashes)
	require.Empty(t, got[0].zipHash, "a zip packed here has no zh: to record")
	fi, err := os.Stat(filepath.Join(got[0].Dir, testprovider.ExecutableName("1.1.0")))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o100, "provider must stay executable")
	require.Equal(t, int64(1), c.Stats().Downloads)

	// A lock file's h1: matches it; a fresh Cache finds it in place.
	again, err := Open(c.Dir(), WithSource(FilesystemMirror(first.Dir())))
	require.NoError(t, err)
	locked, err := again.Ensure(ctx, Requirement{Provider: p, Locked: "1.1.0", LockedHashes: []string{h1}})
	require.NoError(t, err)
	require.Equal(t, got[0].Dir, locked[0].Dir)
	require.Equal(t, Stats{Hits: 1}, again.Stats())
}

// TestFilesystemMirrorUnpackedLinks: version and platform dirs may be
// symlinks (Terraform links packages that way); a link inside a package
// is refused by name, as unzip refuses one in an archive.
func TestFilesystemMirrorUnpackedLinks(t *testing.T) {
	bin := testprovider.Build(t)
	packed := t.TempDir()
	testprovider.WriteFilesystemMirror(t, packed, bin, "1.0.0")
	src, err := Open(t.TempDir(), WithSource(FilesystemMirror(packed)))
	require.NoError(t, err)
	p := testProvider(t)
	ctx := context.Background()
	pkgs, err := src.Ensure(ctx, Requirement{Provider: p})
	require.NoError(t, err)

	mirror := t.TempDir()
	typeDir := filepath.Join(mirror, p.Hostname, p.Namespace, p.Type)
	require.NoError(t, os.MkdirAll(filepath.Join(typeDir, "1.0.0"), 0o755))
	require.NoError(t, os.Symlink(pkgs[0].Dir, filepath.Join(typeDir, "1.0.0", testprovider.Platform)))
	require.NoError(t, os.Symlink(filepath.Join(typeDir, "1.0.0"), filepath.Join(typeDir, "1.0.1")))
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(mirror)))
	require.NoError(t, err)
	got, err := c.Ensure(ctx, Requirement{Provider: p, Constraints: "1.0.0"})
	require.NoError(t, err)
	require.Equal(t, pkgs[0].Hashes, got[0].Hashes)

	// A symlink inside the package dir.
	bad := filepath.Join(mirror, p.Hostname, p.Namespace, p.Type, "2.0.0", testprovider.Platform)
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, testprovider.ExecutableName("2.0.0")), []byte("x"), 0o755))
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(bad, "sneaky")))
	c, err = Open(c.Dir(), WithSource(FilesystemMirror(mirror))) // version lists are kept per Cache
	require.NoError(t, err)
	_, err = c.Ensure(ctx, Requirement{Provider: p, Constraints: "2.0.0"})
	require.ErrorIs(t, err, ErrBadPackage)
	require.Contains(t, err.Error(), "sneaky")
	require.Contains(t, err.Error(), bad)
	_, err = os.Stat(filepath.Join(c.PackagesDir(), p.Hostname, p.Namespace, p.Type, "2.0.0"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing half-installed")
}
