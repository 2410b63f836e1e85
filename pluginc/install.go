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
	"github.com/tfisolate/tfisolate/internal/treesum"
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

// entryRel is the dir, relative to the cache root, that holds the
// package dirs of p at v (one per platform).
func entryRel(p Provider, v *version.Version) string {
	return filepath.Join(p.Hostname, p.Namespace, p.Type, v.String())
}

func (c *Cache) metaPath(p Provider, v *version.Version, plat string) string {
	return filepath.Join(c.dir, stateDir, "meta", p.Hostname, p.Namespace, p.Type, v.String(), plat+".json")
}

func (c *Cache) lockPath(p Provider, v *version.Version, plat string) string {
	return filepath.Join(c.dir, stateDir, "locks", pkgKey(p, v, plat)+".lock")
}

// ensurePackage returns the package, installing it if it is absent and
// reinstalling it if it no longer matches its install record. In a shared
// cache (WithSharedGroup) no record is believed: an entry is used only
// once this process has verified it against its source.
func (c *Cache) ensurePackage(ctx context.Context, p Provider, v *version.Version, plat string) (Package, error) {
	if c.trust.shared {
		if pkg, ok := c.provenPackage(p, v, plat); ok {
			c.hits.Add(1)
			return pkg, nil
		}
	} else {
		e := c.check(p, v, plat)
		if e.err != nil {
			return Package{}, e.err
		}
		if e.state == entryOK {
			c.hits.Add(1)
			return e.pkg, nil
		}
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
	entryNoRecord                   // a package dir without a record the cache can prove it wrote: refilled, never upgraded
)

// entry is what check found.
type entry struct {
	state entryState
	pkg   Package
	meta  *meta
	why   string // what is wrong, for entryChanged and entryNoRecord
	err   error  // a dir on the way to the entry or its record is unsafe (ErrUnsafePath)
}

// check compares a package dir with its install record without reading
// any file: the cheap check done on every use. The directory is renamed
// into place last, so its presence with a matching record means the
// package is complete and is what was verified. Every dir on the way to
// the entry and to its record must pass the cache's ownership rules
// (entry.err otherwise); a record, or an entry dir, that the effective
// user or root did not write is no record (entryNoRecord: refilled).
func (c *Cache) check(p Provider, v *version.Version, plat string) entry {
	dir := c.pkgDir(p, v, plat)
	if err := c.checkInside(entryRel(p, v)); err != nil {
		return entry{err: err}
	}
	if err := c.checkInside(filepath.Join(stateDir, "meta", entryRel(p, v))); err != nil {
		return entry{err: err}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return entry{state: entryAbsent}
	}
	if !fi.IsDir() {
		return entry{state: entryNoRecord, why: "it is not a directory"}
	}
	if why := c.trust.foreignWhy(fi); why != "" {
		return entry{state: entryNoRecord, why: "the package dir " + why}
	}
	mp := c.metaPath(p, v, plat)
	if mfi, err := os.Lstat(mp); err == nil {
		if why := c.trust.foreignWhy(mfi); why != "" {
			return entry{state: entryNoRecord, why: "its install record " + why}
		}
	}
	m, err := readMeta(mp)
	if err != nil {
		return entry{state: entryNoRecord, why: "its install record is missing or unreadable: " + err.Error()}
	}
	if len(m.Files) == 0 {
		// Nothing in it proves the files are what was verified: an h1:
		// is easy to make match any files.
		return entry{state: entryNoRecord, why: "its install record lists no files"}
	}
	e := entry{state: entryOK, meta: m,
		pkg: Package{Provider: p, Version: v.String(), Platform: plat, Dir: dir, Hashes: m.Hashes, zipHash: m.Zip}}
	if why := quickCheck(dir, m); why != "" {
		e.state, e.why = entryChanged, why
	}
	return e
}

// lockPackage takes the package's flock, waiting for another process
// that holds it for as long as ctx allows.
func (c *Cache) lockPackage(ctx context.Context, p Provider, v *version.Version, plat string) (*flock.Flock, error) {
	lk := flock.New(c.lockPath(p, v, plat), flock.SetPermissions(c.lockPerm))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock package %s %s %s: %w", p, v, plat, err)
	}
	if !ok {
		c.waits.Add(1)
		c.log.Debug("waiting for another process installing the package", "provider", p.String(), "version", v.String(), "platform", plat)
		if ok, err = lk.TryLockContext(ctx, lockRetry); !ok || err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("lock package %s %s %s: %w", p, v, plat, err)
		}
	}
	return lk, nil
}

// install takes the package's flock and installs the package unless
// another process did so while this one waited. An entry that no longer
// matches its install record, or has none the cache can prove it wrote,
// is removed and installed afresh from its source: its bytes alone are
// never trusted. In a shared cache every entry found is verified against
// its source (confirm).
func (c *Cache) install(ctx context.Context, p Provider, v *version.Version, plat string) (installResult, error) {
	lk, err := c.lockPackage(ctx, p, v, plat)
	if err != nil {
		return installResult{}, err
	}
	// The lock file itself is never removed: removing it would let two
	// processes hold "the" lock on different inodes.
	defer lk.Unlock()

	if pkg, ok := c.provenPackage(p, v, plat); ok && c.trust.shared {
		return installResult{pkg: pkg}, nil // another caller of this process verified it meanwhile
	}
	e := c.check(p, v, plat)
	if e.err != nil {
		return installResult{}, e.err
	}
	if c.trust.shared && e.state != entryAbsent {
		return c.confirm(ctx, p, v, plat, e)
	}
	if e.state == entryChanged {
		// The stamps moved (a copy, a restore, a touch); the content decides.
		e = c.reverify(p, v, plat, e)
	}
	if e.state == entryOK {
		return installResult{pkg: e.pkg}, nil
	}
	return c.refill(ctx, p, v, plat, e)
}

// refill removes whatever is at the package's place (e says what is
// wrong with it) and installs the package from its source. The caller
// holds the package lock.
func (c *Cache) refill(ctx context.Context, p Provider, v *version.Version, plat string, e entry) (installResult, error) {
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

// confirm verifies an entry against its source: the package is
// downloaded and verified as for a first install, and the entry is kept
// only if its files are the verified package's (names, types, sizes,
// file modes, SHA-256); otherwise it is replaced by the verified package.
// Either way the Package's hashes are this verification's, and this
// process knows the entry from then on (provenPackage). The caller holds
// the package lock.
func (c *Cache) confirm(ctx context.Context, p Provider, v *version.Version, plat string, e entry) (installResult, error) {
	dir := c.pkgDir(p, v, plat)
	c.sweep(p, v, plat)
	got, err := c.fetchVerified(ctx, p, v, plat)
	if err != nil {
		return installResult{}, err
	}
	defer got.cleanup()
	c.verifies.Add(1)
	c.bytes.Add(got.bytes)
	why := e.why
	if now, err := recordDir(dir); err != nil {
		why = err.Error()
	} else if d := sameFiles(now, got.meta.Files); d != "" {
		why = d
	} else if fi, err := os.Lstat(dir); err != nil {
		why = err.Error()
	} else if w := c.trust.unsafeWhy(fi, roleInside); w != "" {
		why = "the package dir " + w
	} else {
		m := got.meta
		m.Files = now
		if err := c.writeMeta(p, v, plat, &m); err != nil {
			return installResult{}, err
		}
		c.log.Info("cache entry verified against a fresh download from its source", "dir", dir, "source", m.Source)
		c.remember(p, v, plat, &m, true)
		return installResult{pkg: m.pkg(p, v, plat, dir)}, nil
	}
	if why == "" {
		why = "its files differ from the package its source gives"
	}
	c.log.Warn("cache entry does not match its source's package; replacing it", "dir", dir, "problem", why)
	if err := c.discard(p, v, plat); err != nil {
		return installResult{}, fmt.Errorf("%w %s (%s): remove it: %w", ErrDamagedEntry, dir, why, err)
	}
	pkg, err := c.place(p, v, plat, got)
	if err != nil {
		return installResult{}, &InstallError{Provider: p, Version: v.String(), Platform: plat, URL: got.url, Err: err}
	}
	c.repairs.Add(1)
	c.downloads.Add(1)
	return installResult{pkg: pkg, downloaded: true}, nil
}

// sameFiles says how the files of an entry (now) differ from a verified
// package's, or "" when they do not. Directories' modes are left out: a
// shared cache makes its dirs group-writable, and a package unpacked
// before was not.
func sameFiles(now, verified treesum.Tree) string {
	cs := slices.DeleteFunc(treesum.Compare(verified, now), func(ch treesum.Change) bool {
		return ch.Kind == treesum.StampChanged || (ch.Kind == treesum.ModeChanged && ch.Found.Mode.IsDir())
	})
	if !cs.Damaged() {
		return ""
	}
	return cs.Describe(treesum.Words{Tree: "the entry", When: "verified from its source"})
}

// reverify reads every file of an entry whose stamps changed and compares
// names, sizes, modes and SHA-256 with the install record. If they all
// match, the record gets the new stamps and the entry is good. The caller
// holds the package lock, and check has made sure the record is the
// cache's own and lists files.
func (c *Cache) reverify(p Provider, v *version.Version, plat string, e entry) entry {
	dir := c.pkgDir(p, v, plat)
	now, err := recordDir(dir)
	if err != nil {
		e.why = err.Error()
		return e
	}
	if d := diffFiles(now, e.meta.Files, true); d != "" {
		e.why = d
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
	if err := c.mkdirs(filepath.Join(stateDir, "meta", entryRel(p, v))); err != nil {
		return err
	}
	return atomicfile.WriteFile(mp, mb, 0o644)
}

// mkdirs creates the dirs from the cache root down to rel that are
// missing (in a shared cache with the group's mode, see WithSharedGroup)
// and checks every one of them.
func (c *Cache) mkdirs(rel string) error {
	p := c.dir
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, part)
		err := os.Mkdir(p, 0o755)
		switch {
		case err == nil && c.trust.shared:
			if err := setGroup(p, c.trust.gid); err != nil {
				return fmt.Errorf("pluginc: share %s with group %d: %w", p, c.trust.gid, err)
			}
		case err != nil && !errors.Is(err, os.ErrExist):
			return err
		}
	}
	return c.checkInside(rel)
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
	got, err := c.fetchVerified(ctx, p, v, plat)
	if err != nil {
		return Package{}, err
	}
	defer got.cleanup()
	pkg, err := c.place(p, v, plat, got)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return Package{}, &InstallError{Provider: p, Version: v.String(), Platform: plat, URL: got.url, Err: err}
	}
	c.downloads.Add(1)
	c.bytes.Add(got.bytes)
	c.log.Info("installed provider", "provider", p.String(), "version", v.String(), "platform", plat, "dir", pkg.Dir, "bytes", got.bytes)
	return pkg, nil
}

// verifiedPackage is a package downloaded, verified and unpacked into a
// temp dir of the cache, with the record of what was verified.
type verifiedPackage struct {
	zip, dir string
	url      string
	bytes    int64
	meta     meta
}

// cleanup removes the temp files (the dir is gone once placed).
func (g *verifiedPackage) cleanup() {
	os.Remove(g.zip)
	os.RemoveAll(g.dir)
}

// fetchVerified downloads the package from the first source that lists
// it, verifies it, unpacks it into a temp dir and records it. The caller
// holds the package lock and calls cleanup.
func (c *Cache) fetchVerified(ctx context.Context, p Provider, v *version.Version, plat string) (*verifiedPackage, error) {
	src, err := c.sourceFor(ctx, p, v)
	if err != nil {
		return nil, &InstallError{Provider: p, Version: v.String(), Platform: plat, Err: err}
	}
	base := filepath.Join(c.dir, stateDir, "tmp", pkgKey(p, v, plat)+"."+strconv.Itoa(os.Getpid()))
	got := &verifiedPackage{zip: base + ".zip", dir: base + ".d"}
	fail := func(url string, err error) (*verifiedPackage, error) {
		got.cleanup()
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, &InstallError{Provider: p, Version: v.String(), Platform: plat, URL: url, Err: err}
	}
	zf, err := os.OpenFile(got.zip, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fail("", err)
	}
	defer zf.Close()
	c.log.Info("downloading provider", "provider", p.String(), "version", v.String(), "platform", plat, "source", src.String())
	f, err := src.fetch(ctx, c.env, p, v, plat, zf)
	if err != nil {
		return fail(f.url, err)
	}
	got.url, got.bytes = f.url, f.bytes
	if err := unzip(zf, got.dir, unzipOptions{name: f.url, maxSize: c.maxUnpack, hook: c.testHookUnpacking, writer: c.env.writer}); err != nil {
		return fail(f.url, err)
	}
	if c.trust.shared {
		// The group may replace the entry: its dirs are group-writable.
		if err := groupWritableDirs(got.dir); err != nil {
			return fail(f.url, err)
		}
	}
	files, err := recordDir(got.dir)
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
	zh := ""
	if f.sha256 != "" { // a package packed from an unpacked mirror has no zip of its own
		zh = "zh:" + f.sha256
	}
	got.meta = meta{Hashes: sortedUnique(append([]string{h1}, f.lockExtra...)), Zip: zh, Source: src.String(), H1: h1, Files: files}
	return got, nil
}

// place writes the record of a verified package, then renames the
// package into place: whoever sees the package sees its record. Renaming
// the dir leaves its files' stamps as recorded. The caller holds the
// package lock.
func (c *Cache) place(p Provider, v *version.Version, plat string, got *verifiedPackage) (Package, error) {
	if err := c.writeMeta(p, v, plat, &got.meta); err != nil {
		return Package{}, err
	}
	final := c.pkgDir(p, v, plat)
	if err := c.mkdirs(entryRel(p, v)); err != nil {
		return Package{}, err
	}
	if err := os.Rename(got.dir, final); err != nil {
		return Package{}, fmt.Errorf("move package into place: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(final)); err != nil {
		return Package{}, err
	}
	c.remember(p, v, plat, &got.meta, true)
	return got.meta.pkg(p, v, plat, final), nil
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
