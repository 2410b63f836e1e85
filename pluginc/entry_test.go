package pluginc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// installed is a cache holding the test provider 1.0.0, as first installed.
type installed struct {
	f     *registryFixture
	dir   string // cache dir
	pkg   Package
	lock  []byte // LockFile of the first install
	bin   string // the provider executable inside the package
	meta  string // its install record
	clean []byte // the executable's verified content
}

func install(t *testing.T) *installed {
	t.Helper()
	f := startRegistry(t, 0, []string{"1.0.0"})
	dir := t.TempDir()
	pkgs, err := f.open(t, dir).Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	v, _ := parseVersion("1.0.0")
	in := &installed{f: f, dir: dir, pkg: pkgs[0], lock: LockFile(pkgs),
		bin:  filepath.Join(pkgs[0].Dir, testprovider.ExecutableName("1.0.0")),
		meta: filepath.Join(dir, current.recordRel(PackageID{Provider: f.p, Version: v.String()}), testprovider.Platform+".json")}
	in.clean, err = os.ReadFile(in.bin)
	require.NoError(t, err)
	_, err = os.Stat(in.meta)
	require.NoError(t, err)
	return in
}

// replace puts other content at path through a new inode, as an attacker
// or a broken tool would, keeping it executable.
func replace(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, content, 0o755))
	require.NoError(t, os.Rename(tmp, path))
}

// TestDamagedEntries: every kind of damage after install is detected on
// the next use and repaired by exactly one fresh, verified download; the
// damaged bytes never reach a Package or a lock file.
func TestDamagedEntries(t *testing.T) {
	evil := []byte("#!/bin/sh\necho not the provider\n")
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, in *installed)
	}{
		{"binary deleted", func(t *testing.T, in *installed) { require.NoError(t, os.Remove(in.bin)) }},
		{"binary truncated", func(t *testing.T, in *installed) { require.NoError(t, os.Truncate(in.bin, int64(len(in.clean)/2))) }},
		{"binary replaced", func(t *testing.T, in *installed) { replace(t, in.bin, evil) }},
		{"binary overwritten in place, same size and mtime", func(t *testing.T, in *installed) {
			fi, err := os.Stat(in.bin)
			require.NoError(t, err)
			bad := append([]byte(nil), in.clean...)
			copy(bad, "not the provider")
			require.NoError(t, os.WriteFile(in.bin, bad, 0o755))
			require.NoError(t, os.Chtimes(in.bin, fi.ModTime(), fi.ModTime()))
		}},
		{"binary not executable", func(t *testing.T, in *installed) { require.NoError(t, os.Chmod(in.bin, 0o644)) }},
		{"extra file", func(t *testing.T, in *installed) {
			require.NoError(t, os.WriteFile(filepath.Join(in.pkg.Dir, "extra"), evil, 0o755))
		}},
		{"extra directory", func(t *testing.T, in *installed) {
			require.NoError(t, os.Mkdir(filepath.Join(in.pkg.Dir, "extra"), 0o755))
		}},
		{"binary replaced by a symlink", func(t *testing.T, in *installed) {
			other := filepath.Join(t.TempDir(), "other")
			require.NoError(t, os.WriteFile(other, in.clean, 0o755))
			require.NoError(t, os.Remove(in.bin))
			require.NoError(t, os.Symlink(other, in.bin))
		}},
		{"metadata deleted", func(t *testing.T, in *installed) { require.NoError(t, os.Remove(in.meta)) }},
		{"metadata deleted and binary replaced", func(t *testing.T, in *installed) {
			require.NoError(t, os.Remove(in.meta))
			replace(t, in.bin, evil)
		}},
		{"metadata corrupt", func(t *testing.T, in *installed) { require.NoError(t, os.WriteFile(in.meta, []byte("{"), 0o644)) }},
		{"metadata lists a file without its SHA-256", func(t *testing.T, in *installed) {
			editMeta(t, in, func(m *meta) { m.Files[0].SHA256 = "" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := install(t)
			tc.damage(t, in)
			damagedH1, _ := hashDir(in.pkg.Dir)

			// Another process, many goroutines: one repair.
			logs := &logRecorder{}
			c := in.f.open(t, in.dir, withLog(logs))
			var wg sync.WaitGroup
			res := make([][]Package, 8)
			errs := make([]error, 8)
			for i := range res {
				wg.Go(func() { res[i], errs[i] = c.Ensure(context.Background(), Requirement{Provider: in.f.p}) })
			}
			wg.Wait()
			for i := range res {
				require.NoError(t, errs[i])
				require.Equal(t, in.pkg, res[i][0])
				require.Equal(t, string(in.lock), string(LockFile(res[i])))
				if damagedH1 != "" && damagedH1 != in.pkg.Hashes[0] {
					require.NotContains(t, string(LockFile(res[i])), damagedH1)
				}
			}
			st := c.Stats()
			require.Equal(t, int64(1), st.Repairs)
			require.Equal(t, int64(1), st.Downloads)
			require.Equal(t, 2, in.f.srv.Downloads(in.f.key("1.0.0")))
			got, err := os.ReadFile(in.bin)
			require.NoError(t, err)
			require.Equal(t, in.clean, got, "the verified binary is back")
			fi, err := os.Stat(in.bin)
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&0o111, "executable again")
			require.Len(t, logs.find("cache entry does not match what was verified at install; reinstalling it from its source"), 1)
			tmp, err := os.ReadDir(filepath.Join(in.dir, stateDir, "tmp"))
			require.NoError(t, err)
			require.Empty(t, tmp)

			// Repaired means recorded again: the next use is a plain hit.
			c2 := in.f.open(t, in.dir)
			_, err = c2.Ensure(context.Background(), Requirement{Provider: in.f.p, Locked: "1.0.0"})
			require.NoError(t, err)
			require.Equal(t, Stats{Hits: 1}, c2.Stats())
		})
	}
}

func withLog(l *logRecorder) Option { return WithLogger(slogNew(l)) }

// TestRestampedEntry: files whose stamps changed but whose content and
// modes are as installed (a restore, a touch) are re-verified from the
// install record without any download, and recorded anew.
func TestRestampedEntry(t *testing.T) {
	in := install(t)
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(in.bin, later, later))
	logs := &logRecorder{}
	c := in.f.open(t, in.dir, withLog(logs))
	for range 2 {
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
		require.NoError(t, err)
		require.Equal(t, in.pkg, pkgs[0])
	}
	require.Equal(t, Stats{Hits: 2}, c.Stats())
	require.Len(t, logs.find("cache entry re-verified against its install record"), 1, "re-verified once, then cheap again")
	require.Equal(t, 1, in.f.srv.Downloads(in.f.key("1.0.0")))
}

// TestOldInstallRecord: a record without per-file entries (hashes only,
// as written before per-file records, or forged: an h1: is easy to make
// match any files) is never upgraded in place from the files it is
// meant to vouch for: the entry is refilled by one verified download,
// whether its files hash to the record's h1: or not.
func TestOldInstallRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, in *installed)
	}{
		{"files as installed", func(*testing.T, *installed) {}},
		{"binary replaced", func(t *testing.T, in *installed) { replace(t, in.bin, []byte("evil")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := install(t)
			var m meta
			require.NoError(t, json.Unmarshal(mustRead(t, in.meta), &m))
			old, err := json.Marshal(map[string]any{"hashes": m.Hashes, "zip": m.Zip, "source": m.Source})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(in.meta, old, 0o644))
			tc.damage(t, in)
			logs := &logRecorder{}
			c := in.f.open(t, in.dir, withLog(logs))
			pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
			require.NoError(t, err)
			require.Equal(t, in.pkg, pkgs[0])
			st := c.Stats()
			require.Equal(t, int64(1), st.Downloads)
			require.Equal(t, int64(1), st.Repairs)
			require.Len(t, logs.find("cache entry does not match what was verified at install; reinstalling it from its source"), 1)
			require.Empty(t, logs.find("cache entry re-verified against its install record"), "never upgraded in place")
			require.Equal(t, in.clean, mustRead(t, in.bin))
			up, err := readMeta(in.meta)
			require.NoError(t, err)
			require.Equal(t, m.Files[0].SHA256, up.Files[0].SHA256, "the refilled entry has a full record")
		})
	}
}

// editMeta rewrites the install record in place.
func editMeta(t *testing.T, in *installed, edit func(*meta)) {
	t.Helper()
	var m meta
	require.NoError(t, json.Unmarshal(mustRead(t, in.meta), &m))
	edit(&m)
	b, err := json.Marshal(&m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in.meta, b, 0o644))
}

// TestOldInstallRecordWithoutDirs: a per-file record written before
// directories were recorded (files only) of a package that has a
// directory is upgraded after its files are found as recorded, without a
// download; with a file changed, the package is reinstalled.
func TestOldInstallRecordWithoutDirs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, docs string)
		repair bool
	}{
		{"as recorded", func(*testing.T, string) {}, false},
		{"a file changed", func(t *testing.T, docs string) { replace(t, filepath.Join(docs, "README"), []byte("EVIL")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := install(t)
			// The package as an older install left it: a file in a
			// directory, recorded without the directory.
			docs := filepath.Join(in.pkg.Dir, "docs")
			require.NoError(t, os.Mkdir(docs, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(docs, "README"), []byte("read"), 0o644))
			now, err := treesum.Record(in.pkg.Dir)
			require.NoError(t, err)
			editMeta(t, in, func(m *meta) {
				m.Files = slices.DeleteFunc(now, func(e treesum.Entry) bool { return e.Mode.IsDir() })
			})
			m, err := readMeta(in.meta)
			require.NoError(t, err, "the old record is readable")
			require.True(t, beforeDirs(m.Files))
			require.Equal(t, "its install record is from before directories were recorded", quickCheck(in.pkg.Dir, m))
			tc.change(t, docs)

			logs := &logRecorder{}
			c := in.f.open(t, in.dir, withLog(logs))
			pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
			require.NoError(t, err)
			require.Equal(t, in.pkg, pkgs[0])
			if tc.repair {
				st := c.Stats()
				require.Equal(t, int64(1), st.Downloads)
				require.Equal(t, int64(1), st.Repairs)
				require.Len(t, logs.find("cache entry does not match what was verified at install; reinstalling it from its source"), 1)
				_, err = os.Stat(docs)
				require.True(t, os.IsNotExist(err), "the reinstalled package is the source's")
				return
			}
			require.Equal(t, Stats{Hits: 1}, c.Stats())
			require.Len(t, logs.find("cache entry re-verified against its install record"), 1)
			up, err := readMeta(in.meta)
			require.NoError(t, err)
			require.False(t, beforeDirs(up.Files))
			require.Equal(t, []string{"docs", "docs/README", testprovider.ExecutableName("1.0.0")}, recordPaths(up.Files))
			require.Equal(t, m.Hashes, up.Hashes)

			// Upgraded: the next use is a plain hit, and the directory is
			// checked like any other path.
			c2 := in.f.open(t, in.dir)
			_, err = c2.Ensure(context.Background(), Requirement{Provider: in.f.p, Locked: "1.0.0"})
			require.NoError(t, err)
			require.Equal(t, Stats{Hits: 1}, c2.Stats())
			require.NoError(t, os.Chmod(docs, 0o700))
			require.Equal(t, "docs has mode drwx------, drwxr-xr-x when installed", quickCheck(in.pkg.Dir, up))
		})
	}
}

func recordPaths(t treesum.Tree) []string {
	var out []string
	for _, e := range t {
		out = append(out, e.Path)
	}
	return out
}

// TestH1Of: the h1: from the records is dirhash's over the same dir,
// directories included in the dir and left out of the hash; a symlink
// makes it fail by name.
func TestH1Of(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "empty"), 0o755))
	for _, f := range []string{"terraform-provider-x", "sub/LICENSE", "a.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644))
	}
	recs, err := recordDir(dir)
	require.NoError(t, err)
	got, err := h1Of(recs)
	require.NoError(t, err)
	want, err := hashDir(dir)
	require.NoError(t, err)
	require.Equal(t, want, got)

	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	recs, err = recordDir(dir)
	require.NoError(t, err)
	_, err = h1Of(recs)
	require.ErrorIs(t, err, ErrBadPackage)
	require.ErrorContains(t, err, "link is not a regular file")
}

// TestDamagedEntryUnrepairable: when the source cannot give the package
// again, the damaged entry is refused by name and removed, never handed out.
func TestDamagedEntryUnrepairable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, in *installed)
		why    string
	}{
		{"replaced", func(t *testing.T, in *installed) { replace(t, in.bin, []byte("evil")) },
			fmt.Sprintf("%s has 4 bytes", testprovider.ExecutableName("1.0.0"))},
		{"metadata deleted", func(t *testing.T, in *installed) { require.NoError(t, os.Remove(in.meta)) },
			"its install record is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := install(t)
			tc.damage(t, in)
			in.f.srv.SetFault(testregistry.FaultStatus500)
			c := in.f.open(t, in.dir, WithRetries(0))
			_, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p, Locked: "1.0.0"})
			require.ErrorIs(t, err, ErrDamagedEntry)
			require.ErrorIs(t, err, ErrDownload)
			require.ErrorContains(t, err, "damaged cache entry "+in.pkg.Dir)
			require.ErrorContains(t, err, tc.why)
			require.ErrorContains(t, err, "500")
			_, err = os.Stat(in.pkg.Dir)
			require.True(t, os.IsNotExist(err), "the damaged entry is gone")
			require.Empty(t, c.cachedProviders(), "terraform is not pointed at it either")
			tmp, err := os.ReadDir(filepath.Join(in.dir, stateDir, "tmp"))
			require.NoError(t, err)
			require.Empty(t, tmp)

			in.f.srv.SetFault(testregistry.FaultNone)
			pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p, Locked: "1.0.0"})
			require.NoError(t, err)
			require.Equal(t, in.pkg, pkgs[0])
		})
	}
}

// TestInstallRecord: the record names every file with its size, mode and
// SHA-256, and its h1: is the h1: Terraform computes for the package.
func TestInstallRecord(t *testing.T) {
	in := install(t)
	m, err := readMeta(in.meta)
	require.NoError(t, err)
	want, err := dirhash.HashDir(in.pkg.Dir, "", dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, want, m.H1)
	require.Contains(t, m.Hashes, want)
	require.Equal(t, "zh:"+sha256Hex(mustRead(t, in.f.zips["1.0.0"])), m.Zip)
	require.Len(t, m.Files, 1)
	require.Equal(t, testprovider.ExecutableName("1.0.0"), m.Files[0].Path)
	require.Equal(t, int64(len(in.clean)), m.Files[0].Size)
	require.Equal(t, sha256Hex(in.clean), m.Files[0].SHA256)
	require.NotZero(t, m.Files[0].Mode&0o111)
}

// TestInstallRecordFormat: the record's files keep the field names
// records have always had, and a record written by the code before
// treesum (size always present, fields in its order) is a plain hit: no
// re-verify, no download.
func TestInstallRecordFormat(t *testing.T) {
	in := install(t)
	var raw struct {
		Files []map[string]json.RawMessage `json:"files"`
	}
	require.NoError(t, json.Unmarshal(mustRead(t, in.meta), &raw))
	require.Len(t, raw.Files, 1)
	require.ElementsMatch(t, []string{"path", "mode", "size", "sha256", "stamp"}, slices.Collect(maps.Keys(raw.Files[0])))
	var stamp map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw.Files[0]["stamp"], &stamp))
	require.ElementsMatch(t, []string{"ino", "mtime", "ctime"}, slices.Collect(maps.Keys(stamp)))

	m, err := readMeta(in.meta)
	require.NoError(t, err)
	type oldFile struct { // pluginc's fileRecord before treesum
		Path   string          `json:"path"`
		Size   int64           `json:"size"`
		Mode   os.FileMode     `json:"mode"`
		SHA256 string          `json:"sha256"`
		Stamp  json.RawMessage `json:"stamp"`
	}
	f := m.Files[0]
	b, err := json.Marshal(map[string]any{"hashes": m.Hashes, "zip": m.Zip, "source": m.Source, "h1": m.H1,
		"files": []oldFile{{Path: f.Path, Size: f.Size, Mode: f.Mode, SHA256: f.SHA256, Stamp: raw.Files[0]["stamp"]}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in.meta, b, 0o644))
	logs := &logRecorder{}
	c := in.f.open(t, in.dir, withLog(logs))
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: in.f.p})
	require.NoError(t, err)
	require.Equal(t, in.pkg, pkgs[0])
	require.Equal(t, Stats{Hits: 1}, c.Stats())
	require.Empty(t, logs.find("cache entry re-verified against its install record"))
	require.Equal(t, b, mustRead(t, in.meta), "a record that checks is not rewritten")
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
