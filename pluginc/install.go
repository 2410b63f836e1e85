package pluginc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// lockRetry is how often a waiter retries a package flock held by another
// process. flock has no portable blocking wait that honours a context.
const lockRetry = 10 * time.Millisecond

// pkgDir is the unpacked-layout path Terraform's filesystem_mirror reads.
func (c *Cache) pkgDir(p Provider, v *version.Version, plat string) string {
	return filepath.Join(c.dir, p.Hostname, p.Namespace, p.Type, v.String(), plat)
}

// pkgKey names a package in the state dir; it is also the prefix of its
// temp files, so a lock holder can find the leftovers of dead processes.
func pkgKey(p Provider, v *version.Version, plat string) string {
	return strings.Join([]string{p.Hostname, p.Namespace, p.Type, v.String(), plat}, "_")
}

func (c *Cache) metaPath(p Provider, v *version.Version, plat string) string {
	return filepath.Join(c.dir, stateDir, "meta", p.Hostname, p.Namespace, p.Type, v.String(), plat+".json")
}

func (c *Cache) lockPath(p Provider, v *version.Version, plat string) string {
	return filepath.Join(c.dir, stateDir, "locks", pkgKey(p, v, plat)+".lock")
}

// ensurePackage returns the package, installing it if it is absent and
// reinstalling it if it no longer matches its install record.
func (c *Cache) ensurePackage(ctx context.Context, p Provider, v *version.Version, plat string) (Package, error) {
	if e := c.check(p, v, plat); e.state == entryOK {
		c.hits.Add(1)
		return e.pkg, nil
	}
	// One install per package in this process: the leader installs in its
	// own goroutine, so nothing outlives this call; the others wait with
	// their own context and get its result.
	res, leader, err := c.installFlights.Do(ctx, pkgKey(p, v, plat), "another Ensure call", func() (installResult, error) {
		return c.install(ctx, p, v, plat)
	})
	if err != nil {
		return Package{}, err
	}
	if !leader || !res.downloaded {
		c.hits.Add(1)
	}
	return res.pkg, nil
}

type installResult struct {
	pkg        Package
	downloaded bool
}

type entryState int

const (
	entryOK       entryState = iota // in place and as recorded at install
	entryAbsent                     // no package dir
	entryChanged                    // something differs from the install record
	entryNoRecord                   // a package dir without a usable install record
)

// entry is what check found.
type entry struct {
	state entryState
	pkg   Package
	meta  *meta
	why   string // what is wrong, for entryChanged and entryNoRecord
}

// check compares a package dir with its install record without reading
// any file: the cheap check done on every use. The directory is renamed
// into place last, so its presence with a matching record means the
// package is complete and is what was verified.
func (c *Cache) check(p Provider, v *version.Version, plat string) entry {
	dir := c.pkgDir(p, v, plat)
	fi, err := os.Lstat(dir)
	if err != nil {
		return entry{state: entryAbsent}
	}
	if !fi.IsDir() {
		return entry{state: entryNoRecord, why: "it is not a directory"}
	}
	m, err := readMeta(c.metaPath(p, v, plat))
	if err != nil {
		return entry{state: entryNoRecord, why: "its install record is missing or unreadable: " + err.Error()}
	}
	e := entry{state: entryOK, meta: m,
		pkg: Package{Provider: p, Version: v.String(), Platform: plat, Dir: dir, Hashes: m.Hashes, zipHash: m.Zip}}
	if why := quickCheck(dir, m); why != "" {
		e.state, e.why = entryChanged, why
	}
	return e
}

// install takes the package's flock and installs the package unless
// another process did so while this one waited. An entry that no longer
// matches its install record, or has none, is removed and installed
// afresh from its source: its bytes alone are never trusted.
func (c *Cache) install(ctx context.Context, p Provider, v *version.Version, plat string) (installResult, error) {
	lk := flock.New(c.lockPath(p, v, plat))
	ok, err := lk.TryLock()
	if err != nil {
		return installResult{}, fmt.Errorf("lock package %s %s %s: %w", p, v, plat, err)
	}
	if !ok {
		c.waits.Add(1)
		c.log.Debug("waiting for another process installing the package", "provider", p.String(), "version", v.String(), "platform", plat)
		if ok, err = lk.TryLockContext(ctx, lockRetry); !ok || err != nil {
			if ctx.Err() != nil {
				return installResult{}, ctx.Err()
			}
			return installResult{}, fmt.Errorf("lock package %s %s %s: %w", p, v, plat, err)
		}
	}
	// The lock file itself is never removed: removing it would let two
	// processes hold "the" lock on different inodes.
	defer lk.Unlock()

	e := c.check(p, v, plat)
	if e.state == entryChanged {
		// The stamps moved (a copy, a restore, a touch); the content decides.
		e = c.reverify(p, v, plat, e)
	}
	if e.state == entryOK {
		return installResult{pkg: e.pkg}, nil
	}
	dir := c.pkgDir(p, v, plat)
	c.sweep(p, v, plat)
	damaged := e.state != entryAbsent
	if damaged {
		c.log.Warn("cache entry does not match what was verified at install; reinstalling it from its source",
			"dir", dir, "problem", e.why)
		if err := c.discard(p, v, plat); err != nil {
			return installResult{}, fmt.Errorf("%w %s (%s): remove it: %w", ErrDamagedEntry, dir, e.why, err)
		}
	}
	pkg, err := c.download(ctx, p, v, plat)
	if err != nil {
		if damaged && ctx.Err() == nil {
			err = fmt.Errorf("%w %s (%s) was removed, and reinstalling it failed: %w", ErrDamagedEntry, dir, e.why, err)
		}
		return installResult{}, err
	}
	if damaged {
		c.repairs.Add(1)
	}
	return installResult{pkg: pkg, downloaded: true}, nil
}

// reverify reads every file of an entry whose stamps changed and compares
// names, sizes, modes and SHA-256 with the install record. If they all
// match, the record gets the new stamps and the entry is good. The caller
// holds the package lock.
func (c *Cache) reverify(p Provider, v *version.Version, plat string, e entry) entry {
	dir := c.pkgDir(p, v, plat)
	now, err := recordDir(dir)
	if err != nil {
		e.why = err.Error()
		return e
	}
	if len(e.meta.Files) > 0 {
		if d := diffFiles(now, e.meta.Files, true); d != "" {
			e.why = d
			return e
		}
	} else if h1, err := h1Of(now); err != nil {
		// A record from before per-file records: the h1: decides.
		e.why = fmt.Sprintf("its files cannot be hashed (%v) to compare with %s, recorded when installed", err, e.meta.lockH1())
		return e
	} else if h1 != e.meta.lockH1() {
		e.why = fmt.Sprintf("its files hash to %s, %s when installed", h1, e.meta.lockH1())
		return e
	}
	m := *e.meta
	m.Files, m.H1 = now, e.meta.lockH1()
	if err := c.writeMeta(p, v, plat, &m); err != nil {
		e.why = err.Error()
		return e
	}
	c.log.Info("cache entry re-verified against its install record", "dir", dir)
	e.state, e.meta = entryOK, &m
	return e
}

// discard moves a package dir out of the tree (atomically, so no reader
// sees half of it), then removes it and its record. The caller holds the
// package lock.
func (c *Cache) discard(p Provider, v *version.Version, plat string) error {
	aside := filepath.Join(c.dir, stateDir, "tmp", pkgKey(p, v, plat)+"."+strconv.Itoa(os.Getpid())+"-damaged.d")
	if err := os.Rename(c.pkgDir(p, v, plat), aside); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Remove(c.metaPath(p, v, plat)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.RemoveAll(aside)
}

func (c *Cache) writeMeta(p Provider, v *version.Version, plat string, m *meta) error {
	mp := c.metaPath(p, v, plat)
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(mp), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(mp, mb, 0o644)
}

// sweep removes temp files and dirs of earlier attempts at this package.
// Only the holder of the package flock creates them, so while we hold it
// every one of them belongs to a process that died or gave up.
func (c *Cache) sweep(p Provider, v *version.Version, plat string) {
	tmp := filepath.Join(c.dir, stateDir, "tmp")
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	prefix := pkgKey(p, v, plat) + "."
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			c.log.Info("removing leftover of an interrupted install", "path", filepath.Join(tmp, e.Name()))
			_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
	// A writer killed while replacing the meta file leaves its temp file.
	metaDir := filepath.Dir(c.metaPath(p, v, plat))
	leftovers, _ := filepath.Glob(filepath.Join(metaDir, atomicfile.TempPrefix+plat+".json-*"))
	for _, l := range leftovers {
		_ = os.Remove(l)
	}
}

// download fetches, verifies, unpacks and renames the package into place.
func (c *Cache) download(ctx context.Context, p Provider, v *version.Version, plat string) (Package, error) {
	src, err := c.sourceFor(ctx, p, v)
	if err != nil {
		return Package{}, &InstallError{Provider: p, Version: v.String(), Platform: plat, Err: err}
	}
	fail := func(url string, err error) (Package, error) {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return Package{}, &InstallError{Provider: p, Version: v.String(), Platform: plat, URL: url, Err: err}
	}
	base := filepath.Join(c.dir, stateDir, "tmp", pkgKey(p, v, plat)+"."+strconv.Itoa(os.Getpid()))
	zipPath, unpackDir := base+".zip", base+".d"
	defer os.Remove(zipPath)
	defer os.RemoveAll(unpackDir) // a no-op once renamed into place

	zf, err := os.OpenFile(zipPath, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fail("", err)
	}
	defer zf.Close()
	c.log.Info("downloading provider", "provider", p.String(), "version", v.String(), "platform", plat, "source", src.String())
	f, err := src.fetch(ctx, c.env, p, v, plat, zf)
	if err != nil {
		return fail(f.url, err)
	}
	if err := unzip(zf, unpackDir, unzipOptions{name: f.url, maxSize: c.maxUnpack, hook: c.testHookUnpacking, writer: c.env.writer}); err != nil {
		return fail(f.url, err)
	}
	files, err := recordDir(unpackDir)
	if err != nil {
		return fail(f.url, err)
	}
	h1, err := h1Of(files)
	if err != nil {
		return fail(f.url, err)
	}
	if len(f.wantH1) > 0 && !slices.Contains(f.wantH1, h1) {
		return fail(f.url, fmt.Errorf("%w: package hash %s is none of the mirror's hashes %s", ErrChecksum, h1, strings.Join(f.wantH1, ", ")))
	}
	hashes := sortedUnique(append([]string{h1}, f.lockExtra...))

	// The record first, then the package: whoever sees the package sees
	// its record. Renaming the dir leaves its files' stamps as recorded.
	zh := ""
	if f.sha256 != "" { // a package packed from an unpacked mirror has no zip of its own
		zh = "zh:" + f.sha256
	}
	if err := c.writeMeta(p, v, plat, &meta{Hashes: hashes, Zip: zh, Source: src.String(), H1: h1, Files: files}); err != nil {
		return fail(f.url, err)
	}
	final := c.pkgDir(p, v, plat)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fail(f.url, err)
	}
	if err := os.Rename(unpackDir, final); err != nil {
		return fail(f.url, fmt.Errorf("move package into place: %w", err))
	}
	if err := atomicfile.SyncDir(filepath.Dir(final)); err != nil {
		return fail(f.url, err)
	}
	c.downloads.Add(1)
	c.bytes.Add(f.bytes)
	c.log.Info("installed provider", "provider", p.String(), "version", v.String(), "platform", plat, "dir", final, "bytes", f.bytes)
	return Package{Provider: p, Version: v.String(), Platform: plat, Dir: final, Hashes: hashes, zipHash: zh}, nil
}

// sourceFor returns the first source that lists v.
func (c *Cache) sourceFor(ctx context.Context, p Provider, v *version.Version) (Source, error) {
	l, err := c.listing(ctx, p)
	if err != nil {
		return nil, err
	}
	i, ok := l.from[v.String()]
	if !ok {
		return nil, fmt.Errorf("%w: version %s of %s is offered by none of the sources (%s); available versions: %s",
			ErrLockedVersion, v, p, c.sourceNames(), listVersions(l.versions))
	}
	return c.sources[i], nil
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
