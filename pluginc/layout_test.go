package pluginc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestPluginCacheLayoutIsNotTheCaches: what a plain terraform or tofu
// given the cache dir as its plugin_cache_dir writes (the package,
// unpacked in place, into DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH, and
// rewritten there by the next init) is nothing the cache hands out:
// the entry Terraform is pointed at lives below PackagesDir, stays as it
// was verified, and Ensure neither repairs nor downloads anything.
func TestPluginCacheLayoutIsNotTheCaches(t *testing.T) {
	in := install(t)
	c := in.f.open(t, in.dir)
	require.Equal(t, filepath.Join(in.dir, stateDir, "packages"), c.PackagesDir())
	require.True(t, strings.HasPrefix(in.pkg.Dir, c.PackagesDir()+string(filepath.Separator)), "%s is below %s", in.pkg.Dir, c.PackagesDir())

	// A plain engine's plugin cache entry for the same package, and the
	// next init unpacking another build over it in place.
	plain := filepath.Join(in.dir, in.f.p.Hostname, in.f.p.Namespace, in.f.p.Type, "1.0.0", testprovider.Platform)
	require.NoError(t, os.MkdirAll(plain, 0o775)) // a CI agent's umask 002
	plainBin := filepath.Join(plain, testprovider.ExecutableName("1.0.0"))
	require.NoError(t, os.WriteFile(plainBin, in.clean, 0o755))
	f, err := os.OpenFile(plainBin, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString("#!/bin/sh\necho another build\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
	require.NoError(t, err)
	require.Equal(t, in.pkg, pkgs[0])
	require.Equal(t, string(in.lock), string(LockFile(pkgs)))
	require.Equal(t, Stats{Hits: 1}, c.Stats(), "no repair, no download")
	got, err := os.ReadFile(in.bin)
	require.NoError(t, err)
	require.Equal(t, in.clean, got, "the cache's entry is as verified")

	cfg := string(c.CLIConfig())
	require.Contains(t, cfg, `"path": "`+filepath.ToSlash(c.PackagesDir())+`"`, "terraform reads the cache's own layout:\n%s", cfg)
	require.NotContains(t, cfg, `"path": "`+filepath.ToSlash(in.dir)+`"`, "never the plugin cache's:\n%s", cfg)
}

// legacyInstall is a cache as the previous release left it: the test
// provider 1.0.0 at DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH with its
// install record in DIR/.pluginc/meta (moved there from where this
// release installs it, so every stamp is the install's).
type legacyInstall struct {
	*installed
	oldDir, oldBin, oldMeta string
}

func installLegacy(t *testing.T) *legacyInstall {
	t.Helper()
	in := install(t)
	id := in.pkg.id()
	l := &legacyInstall{installed: in, oldDir: filepath.Join(in.dir, legacy.entryRel(id), id.Platform),
		oldMeta: filepath.Join(in.dir, legacy.recordRel(id), id.Platform+".json")}
	l.oldBin = filepath.Join(l.oldDir, testprovider.ExecutableName("1.0.0"))
	for _, mv := range [][2]string{{in.pkg.Dir, l.oldDir}, {in.meta, l.oldMeta}} {
		require.NoError(t, os.MkdirAll(filepath.Dir(mv[1]), 0o755))
		require.NoError(t, os.Rename(mv[0], mv[1]))
	}
	require.NoError(t, os.RemoveAll(filepath.Join(in.dir, current.packages)))
	require.NoError(t, os.RemoveAll(filepath.Join(in.dir, current.records)))
	return l
}

// TestLegacyLayoutMigrates: an entry of the previous release's layout
// whose install record the cache wrote is copied into the current layout
// and verified against that record, without a download; the copy shares
// no inode with the old entry, so a plain engine rewriting the old entry
// in place later never reaches it; the old entry and record stay as they
// were for the previous release's processes. An old entry that does not
// match its record, has none, or sits below a dir another could write is
// not used: the package comes from its source, verified.
func TestLegacyLayoutMigrates(t *testing.T) {
	t.Run("verified copy, no download", func(t *testing.T) {
		l := installLegacy(t)
		oldRec, err := os.ReadFile(l.oldMeta)
		require.NoError(t, err)
		logs := &logRecorder{}
		c := l.f.open(t, l.dir, withLog(logs))
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: l.f.p})
		require.NoError(t, err)
		require.Equal(t, l.pkg, pkgs[0], "the same package, in the current layout")
		require.Equal(t, string(l.lock), string(LockFile(pkgs)))
		require.Zero(t, c.Stats().Downloads)
		require.Zero(t, c.Stats().Repairs)
		require.Equal(t, 1, l.f.srv.Downloads(l.f.key("1.0.0")), "only the first install downloaded")
		require.Len(t, logs.find("cache entry of the previous layout copied into the current one and verified against its install record"), 1)
		tmp, err := os.ReadDir(filepath.Join(l.dir, stateDir, "tmp"))
		require.NoError(t, err)
		require.Empty(t, tmp)

		// The old entry and record are left for the previous release.
		got, err := os.ReadFile(l.oldBin)
		require.NoError(t, err)
		require.Equal(t, l.clean, got)
		rec, err := os.ReadFile(l.oldMeta)
		require.NoError(t, err)
		require.Equal(t, oldRec, rec)
		ofi, err := os.Stat(l.oldBin)
		require.NoError(t, err)
		nfi, err := os.Stat(l.bin)
		require.NoError(t, err)
		require.False(t, os.SameFile(ofi, nfi), "the copy is a new inode")

		// A plain engine now rewrites the old entry in place: the
		// current entry is untouched, and a fresh process finds it as
		// it was placed, without a word.
		require.NoError(t, os.WriteFile(l.oldBin, []byte("#!/bin/sh\necho another build\n"), 0o755))
		c2 := l.f.open(t, l.dir)
		pkgs, err = c2.Ensure(context.Background(), Requirement{Provider: l.f.p})
		require.NoError(t, err)
		require.Equal(t, l.pkg, pkgs[0])
		require.Equal(t, Stats{Hits: 1}, c2.Stats())
		got, err = os.ReadFile(l.bin)
		require.NoError(t, err)
		require.Equal(t, l.clean, got)
	})
	evil := []byte("#!/bin/sh\necho not the provider\n")
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, l *legacyInstall)
	}{
		{"old entry rewritten in place by a plain engine", func(t *testing.T, l *legacyInstall) {
			fi, err := os.Stat(l.oldBin)
			require.NoError(t, err)
			bad := append([]byte(nil), l.clean...)
			copy(bad, "another build")
			require.NoError(t, os.WriteFile(l.oldBin, bad, 0o755))
			require.NoError(t, os.Chtimes(l.oldBin, fi.ModTime(), fi.ModTime()))
		}},
		{"old entry without a record (a plain engine's install)", func(t *testing.T, l *legacyInstall) {
			require.NoError(t, os.Remove(l.oldMeta))
		}},
		{"old record that does not describe the files", func(t *testing.T, l *legacyInstall) {
			replace(t, l.oldBin, evil)
			require.NoError(t, os.Remove(l.oldMeta))
			require.NoError(t, os.WriteFile(l.oldMeta, []byte("{"), 0o644))
		}},
		{"old entry below a dir its group can write (a plain engine's umask)", func(t *testing.T, l *legacyInstall) {
			require.NoError(t, os.Chmod(filepath.Join(l.dir, l.f.p.Hostname), 0o775))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := installLegacy(t)
			tc.change(t, l)
			before, err := os.ReadFile(l.oldBin)
			require.NoError(t, err)
			logs := &logRecorder{}
			c := l.f.open(t, l.dir, withLog(logs))
			pkgs, err := c.Ensure(context.Background(), Requirement{Provider: l.f.p})
			require.NoError(t, err)
			require.Equal(t, l.pkg.Hashes, pkgs[0].Hashes)
			require.Equal(t, string(l.lock), string(LockFile(pkgs)))
			require.Equal(t, int64(1), c.Stats().Downloads, "installed from its source")
			require.Zero(t, c.Stats().Repairs, "nothing of the current layout was damaged")
			require.Equal(t, 2, l.f.srv.Downloads(l.f.key("1.0.0")))
			got, err := os.ReadFile(l.bin)
			require.NoError(t, err)
			require.Equal(t, l.clean, got, "the verified package")
			require.Len(t, logs.find("cache entry of the previous layout not used; installing the package from its source"), 1)
			after, err := os.ReadFile(l.oldBin)
			require.NoError(t, err)
			require.Equal(t, before, after, "the old entry is left as it was")
		})
	}
}
