//go:build unix

package pluginc

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// evilProvider is what an attacker plants as the provider: a script that
// leaves a marker when run.
func evilProvider(marker string) []byte {
	return []byte("#!/bin/sh\ntouch '" + marker + "'\nexit 1\n")
}

// plantAt is the act of planting evil as version v of the test provider
// in the cache at dir, with a record that matches it and claims the
// genuine zip's zh: (and the registry's other hashes).
func plantAt(t *testing.T, f *registryFixture, dir, v string, content []byte) otherAct {
	t.Helper()
	pv, err := parseVersion(v)
	require.NoError(t, err)
	c := &Cache{dir: dir}
	genuine := sha256File(t, f.zips[v])
	return otherAct{
		Entry: c.pkgDir(PackageID{f.p, pv.String(), testprovider.Platform}), Meta: c.metaPath(PackageID{f.p, pv.String(), testprovider.Platform}),
		Files: map[string][]byte{testprovider.ExecutableName(v): content},
		Zip:   genuine, Extra: []string{genuine, "zh:" + sha256Hex(standIn(t, v))},
	}
}

func h1OfDir(t *testing.T, dir string) string {
	t.Helper()
	files, err := treesum.Record(dir)
	require.NoError(t, err)
	h1, err := h1Of(files)
	require.NoError(t, err)
	return h1
}

// TestOpenRefusesRootOfAnotherUser: a cache root another user created
// first, at a path anyone can create (in a sticky, world-writable dir,
// as /tmp/tfisolate-cache would be), is refused by name with its owner
// and mode, and nothing is written in it.
func TestOpenRefusesRootOfAnotherUser(t *testing.T) {
	needRoot(t)
	tmp := reachable(t, t.TempDir())
	require.NoError(t, os.Chmod(tmp, 0o777|os.ModeSticky))
	root := filepath.Join(tmp, "tfisolate-cache")
	asOther(t, otherAct{Mkdir: root})
	fi, err := os.Stat(root)
	require.NoError(t, err)
	_, err = Open(root)
	requireUnsafe(t, err, root, otherID, fi.Mode().Perm())
	require.ErrorContains(t, err, "owned by uid 65534")
	require.NoDirExists(t, filepath.Join(root, stateDir))
}

// TestForeignEntryRefilled: in a cache that others could write to once
// (its mode fixed since), an entry and install record another user
// planted (the record matching the planted files and claiming the
// genuine zh:) are not believed: the record is not the cache's own, so
// the entry is refilled from the source. The same for a record of
// theirs over a genuine entry: the package's hashes never come from it.
func TestForeignEntryRefilled(t *testing.T) {
	const v = "1.0.0"
	pv, err := parseVersion(v)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, f *registryFixture, dir string) otherAct
	}{
		{"their entry and record", func(t *testing.T, f *registryFixture, dir string) otherAct {
			return plantAt(t, f, dir, v, evilProvider(filepath.Join(dir, "PLANTED-RAN")))
		}},
		{"their record over our entry", func(t *testing.T, f *registryFixture, dir string) otherAct {
			_, err := f.open(t, dir).Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
			require.NoError(t, err)
			a := plantAt(t, f, dir, v, nil)
			a.RecordOnly, a.Files = true, nil
			a.Extra = append(a.Extra, "zh:"+strings.Repeat("0", 64)) // a hash of theirs for the lock file
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needRoot(t)
			f := startRegistry(t, 0, []string{v})
			dir := filepath.Join(reachable(t, t.TempDir()), "cache")
			c0 := f.open(t, dir)
			require.NoError(t, os.Chmod(dir, 0o755)) // Open makes a new root 0700; theirs to reach then
			act := tc.plant(t, f, dir)
			// The dirs their entry and record go in were writable by
			// others back then.
			way := []string{filepath.Join(dir, current.entryRel(PackageID{Provider: f.p, Version: pv.String()})), filepath.Join(dir, current.recordRel(PackageID{Provider: f.p, Version: pv.String()}))}
			for _, d := range way {
				require.NoError(t, c0.mkdirs(mustRel(t, dir, d)))
				require.NoError(t, os.Chmod(d, 0o777))
			}
			if act.RecordOnly {
				require.NoError(t, os.Chmod(act.Entry, 0o777))
			}
			asOther(t, act)
			for _, d := range append(way, act.Entry) {
				require.NoError(t, os.Chmod(d, 0o755))
			}

			logs := &logRecorder{}
			c := f.open(t, dir, withLog(logs))
			pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
			require.NoError(t, err)
			st := c.Stats()
			require.Equal(t, int64(1), st.Repairs, "refilled")
			require.Equal(t, int64(1), st.Downloads)
			require.Len(t, logs.find("cache entry does not match what was verified at install; reinstalling it from its source"), 1)
			require.Equal(t, h1OfDir(t, pkgs[0].Dir), pkgs[0].Hashes[0])
			require.NotContains(t, strings.Join(pkgs[0].Hashes, " "), strings.Repeat("0", 64))
			require.NoFileExists(t, filepath.Join(dir, "PLANTED-RAN"))
			fi, err := os.Stat(c.metaPath(PackageID{f.p, pv.String(), testprovider.Platform}))
			require.NoError(t, err)
			require.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, "the record is the cache's own now")
		})
	}
}

func mustRel(t *testing.T, base, p string) string {
	t.Helper()
	rel, err := filepath.Rel(base, p)
	require.NoError(t, err)
	return rel
}

// TestSharedGroupPlantedEntry: in a cache shared with a group on purpose
// (WithSharedGroup), a member can plant an entry with a record that
// matches it and claims the genuine zh:, before or after the package was
// installed; the first use of the entry in every process verifies it
// against its source, so the planted package is replaced before anyone
// gets it and its hash never reaches a Package or a lock file. A member's
// genuine install is used after the same verification.
func TestSharedGroupPlantedEntry(t *testing.T) {
	needRoot(t)
	const v = "1.0.0"
	pv, err := parseVersion(v)
	require.NoError(t, err)
	f := startRegistry(t, 0, []string{v})
	dir := filepath.Join(reachable(t, t.TempDir()), "cache")
	open := func(opts ...Option) *Cache {
		return f.open(t, dir, append([]Option{WithSharedGroup(otherID)}, opts...)...)
	}
	c0 := open()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, uint32(otherID), fi.Sys().(*syscall.Stat_t).Gid, "a root Open creates is the group's")
	require.Equal(t, os.ModeDir|os.ModeSetgid|0o775, fi.Mode())
	_, err = Open(dir)
	require.ErrorIs(t, err, ErrUnsafePath, "without the option the group's cache is refused")

	marker := filepath.Join(dir, "PLANTED-RAN")
	evil := plantAt(t, f, dir, v, evilProvider(marker))
	evilH1 := func() string {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, testprovider.ExecutableName(v)), evilProvider(marker), 0o755))
		return h1OfDir(t, d)
	}()
	entry := c0.pkgDir(PackageID{f.p, pv.String(), testprovider.Platform})
	bin := filepath.Join(entry, testprovider.ExecutableName(v))
	var lock, clean []byte
	requireGenuine := func(t *testing.T, pkgs []Package) {
		t.Helper()
		require.NotContains(t, pkgs[0].Hashes, evilH1)
		require.Equal(t, h1OfDir(t, entry), pkgs[0].Hashes[0])
		require.NotContains(t, string(mustRead(t, bin)), marker)
		require.NoFileExists(t, marker)
		if lock != nil {
			require.Equal(t, string(lock), string(LockFile(pkgs)))
		}
	}

	t.Run("planted before any install", func(t *testing.T) {
		asOther(t, evil)
		logs := &logRecorder{}
		c := open(withLog(logs))
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
		require.NoError(t, err)
		requireGenuine(t, pkgs)
		lock, clean = LockFile(pkgs), mustRead(t, bin)
		st := c.Stats()
		require.Equal(t, int64(1), st.Verifies)
		require.Equal(t, int64(1), st.Repairs)
		require.Len(t, logs.find("cache entry does not match its source's package; replacing it"), 1)
		// Verified once per process.
		_, err = c.Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
		require.NoError(t, err)
		require.Equal(t, int64(1), c.Stats().Verifies)
	})
	t.Run("planted over a verified entry, with a lock file", func(t *testing.T) {
		before := open()
		_, err := before.Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
		require.NoError(t, err)
		require.Equal(t, Stats{Hits: 1, Verifies: 1, Bytes: before.Stats().Bytes}, before.Stats(), "a genuine entry is kept")
		asOther(t, evil)
		locks, err := ParseLockFile(lock)
		require.NoError(t, err)
		pkgs, err := before.Ensure(context.Background(), locks[0].Requirement())
		require.NoError(t, err, "the process that verified it before")
		requireGenuine(t, pkgs)
		require.Equal(t, int64(1), before.Stats().Repairs)
		asOther(t, evil)
		pkgs, err = open().Ensure(context.Background(), locks[0].Requirement())
		require.NoError(t, err, "a new process")
		requireGenuine(t, pkgs)
	})
	t.Run("a member's genuine install", func(t *testing.T) {
		genuine := plantAt(t, f, dir, v, nil)
		genuine.Files = map[string][]byte{testprovider.ExecutableName(v): clean}
		asOther(t, genuine)
		c := open()
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Locked: v})
		require.NoError(t, err)
		requireGenuine(t, pkgs)
		st := c.Stats()
		require.Equal(t, int64(1), st.Verifies)
		require.Zero(t, st.Repairs)
		require.Zero(t, st.Downloads)
	})
}

// TestLockedHashesCheckTheFiles: a committed lock file is matched
// against the h1: of the entry's files, hashed by this process, or a zip
// this process downloaded and verified: never against an install
// record's claim. An entry whose own record was rewritten to match a
// replaced binary and to claim the genuine zh: is verified against its
// source and refilled, and the package's hashes keep every locked hash.
func TestLockedHashesCheckTheFiles(t *testing.T) {
	t.Run("record forged to match a replaced binary", func(t *testing.T) {
		in := install(t)
		locks, err := ParseLockFile(in.lock)
		require.NoError(t, err)
		replace(t, in.bin, evilProvider(filepath.Join(in.dir, "PLANTED-RAN")))
		files, err := treesum.Record(in.pkg.Dir)
		require.NoError(t, err)
		h1, err := h1Of(files)
		require.NoError(t, err)
		editMeta(t, in, func(m *meta) {
			m.Files, m.H1 = files, h1
			m.Hashes = sortedUnique(append(slices.DeleteFunc(m.Hashes, func(h string) bool { return strings.HasPrefix(h, "h1:") }), h1))
		})
		c := in.f.open(t, in.dir)
		pkgs, err := c.Ensure(context.Background(), locks[0].Requirement())
		require.NoError(t, err)
		require.Equal(t, in.clean, mustRead(t, in.bin), "refilled")
		require.Equal(t, string(in.lock), string(LockFile(pkgs)))
		st := c.Stats()
		require.Equal(t, int64(1), st.Verifies)
		require.Equal(t, int64(1), st.Repairs)
	})
	t.Run("every committed hash is kept", func(t *testing.T) {
		in := install(t)
		locks, err := ParseLockFile(in.lock)
		require.NoError(t, err)
		other := "h1:" + strings.Repeat("B", 43) + "=" // another platform's package
		req := locks[0].Requirement()
		req.LockedHashes = append(req.LockedHashes, other)
		c := in.f.open(t, in.dir)
		pkgs, err := c.Ensure(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, sortedUnique(req.LockedHashes), pkgs[0].Hashes)
		require.Equal(t, Stats{Hits: 1}, c.Stats(), "the files' h1: matched: no download")
	})
	t.Run("only this platform's zh: locked", func(t *testing.T) {
		in := install(t)
		thisZip := sha256File(t, in.f.zips["1.0.0"])
		c := in.f.open(t, in.dir)
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p, Locked: "1.0.0", LockedHashes: []string{thisZip}})
		require.NoError(t, err)
		require.Equal(t, in.pkg.Hashes, pkgs[0].Hashes, "the h1: and zh: a fresh verification vouches for")
		st := c.Stats()
		require.Equal(t, int64(1), st.Verifies, "the record's zh: is no proof: the zip is downloaded and verified")
		require.Zero(t, st.Repairs)
	})
}
