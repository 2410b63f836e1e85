package pluginc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/reflink"
	"github.com/tfisolate/tfisolate/internal/store"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// layout is where a release of the cache keeps its packages and their
// install records, relative to the cache root.
type layout struct {
	packages string // the root of Terraform's unpacked filesystem-mirror layout
	records  string // the root of the install records, in the same layout
}

var (
	// current keeps the packages inside the state dir, where no plain
	// terraform or tofu ever writes: one given the cache dir as its
	// plugin_cache_dir (or TF_PLUGIN_CACHE_DIR) unpacks in place into
	// DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH, truncating and rewriting
	// the files there, and skips the dot-named state dir as an invalid
	// hostname. What the SDK's terraform executes is only ever written
	// here, by the cache.
	current = layout{packages: filepath.Join(stateDir, "packages"), records: filepath.Join(stateDir, "records")}
	// legacy is the previous releases' layout: packages at the root, in
	// the very place a plain engine's plugin cache unpacks into. Entries
	// found there are never handed to terraform; one whose install record
	// the cache wrote is copied into the current layout and verified
	// against that record (migrate), then left where it is for the
	// previous release's processes that may still use it.
	legacy = layout{packages: "", records: filepath.Join(stateDir, "meta")}
)

// entryRel is the dir, relative to the cache root, that holds the
// package dirs of id's provider at its version (one per platform).
func (l layout) entryRel(id PackageID) string {
	return filepath.Join(l.packages, id.Provider.Hostname, id.Provider.Namespace, id.Provider.Type, id.Version)
}

// recordRel is the dir, relative to the cache root, that holds the
// install records of id's provider at its version.
func (l layout) recordRel(id PackageID) string {
	return filepath.Join(l.records, id.Provider.Hostname, id.Provider.Namespace, id.Provider.Type, id.Version)
}

func (c *Cache) pkgDirIn(l layout, id PackageID) string {
	return filepath.Join(c.dir, l.entryRel(id), id.Platform)
}

func (c *Cache) metaPathIn(l layout, id PackageID) string {
	return filepath.Join(c.dir, l.recordRel(id), id.Platform+".json")
}

// pkgDir is the package's dir in the layout Terraform's filesystem_mirror
// reads (below PackagesDir).
func (c *Cache) pkgDir(id PackageID) string { return c.pkgDirIn(current, id) }

// metaPath is the package's install record.
func (c *Cache) metaPath(id PackageID) string { return c.metaPathIn(current, id) }

// pkgKey names a package in the state dir; it is also the prefix of its
// temp files, so a lock holder can find the leftovers of dead processes.
// It is the same in every layout: a previous release's process and this
// one take the same lock for a package and sweep each other's leftovers.
func pkgKey(id PackageID) string {
	return strings.Join([]string{id.Provider.Hostname, id.Provider.Namespace, id.Provider.Type, id.Version, id.Platform}, "_")
}

func (c *Cache) lockPath(id PackageID) string { return c.locks.Path(pkgKey(id)) }

// ensurePackage returns the package, installing it if it is absent and
// reinstalling it if it no longer matches its install record. In a shared
// cache (WithSharedGroup) no record is believed: an entry is used only
// once this process has verified it against its source.
func (c *Cache) ensurePackage(ctx context.Context, id PackageID) (Package, error) {
	if c.trust.shared {
		if pkg, ok := c.provenPackage(id); ok {
			c.hits.Add(1)
			return pkg, nil
		}
	} else {
		e := c.check(id)
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
	res, leader, err := c.installFlights.Do(ctx, pkgKey(id), "another Ensure call", func() (installResult, error) {
		return c.install(ctx, id)
	})
	if err != nil {
		return Package{}, err
	}
	if !leader || !res.downloaded {
		c.hits.Add(1)
	}
	reportFallbacks(ctx, res.fallbacks) // every caller the install served, waiters too
	return res.pkg, nil
}

type installResult struct {
	pkg        Package
	downloaded bool
	fallbacks  []Fallback // sources that failed before the one the package came from
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
	err   error  // a dir on the way to the entry or its record is unsafe (ErrUnsafePath), or its record a newer release's (ErrNewerFormat)
}

// check compares a package dir with its install record without reading
// any file: the cheap check done on every use. The directory is renamed
// into place last, so its presence with a matching record means the
// package is complete and is what was verified. Every dir on the way to
// the entry and to its record must pass the cache's ownership rules
// (entry.err otherwise); a record, or an entry dir, that the effective
// user or root did not write is no record (entryNoRecord: refilled).
func (c *Cache) check(id PackageID) entry { return c.checkIn(current, id) }

// checkIn is check in the layout l.
func (c *Cache) checkIn(l layout, id PackageID) entry {
	dir := c.pkgDirIn(l, id)
	if err := c.checkInside(l.entryRel(id)); err != nil {
		return entry{err: err}
	}
	if err := c.checkInside(l.recordRel(id)); err != nil {
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
	mp := c.metaPathIn(l, id)
	if mfi, err := os.Lstat(mp); err == nil {
		if why := c.trust.foreignWhy(mfi); why != "" {
			return entry{state: entryNoRecord, why: "its install record " + why}
		}
	}
	m, err := readMeta(mp)
	if errors.Is(err, ErrNewerFormat) {
		// A newer release's entry: neither believed nor refilled over.
		return entry{err: fmt.Errorf("provider cache entry %s: %w", dir, err)}
	}
	if err != nil {
		return entry{state: entryNoRecord, why: "its install record is missing or unreadable: " + err.Error()}
	}
	if len(m.Files) == 0 {
		// Nothing in it proves the files are what was verified: an h1:
		// is easy to make match any files.
		return entry{state: entryNoRecord, why: "its install record lists no files"}
	}
	e := entry{state: entryOK, meta: m,
		pkg: Package{Provider: id.Provider, Version: id.Version, Platform: id.Platform, Dir: dir, Hashes: m.Hashes, zipHash: m.Zip}}
	if why := quickCheck(dir, m); why != "" {
		e.state, e.why = entryChanged, why
	}
	return e
}

// lockPackage takes the package's flock, waiting for another process
// that holds it for as long as ctx allows, and returns its release.
func (c *Cache) lockPackage(ctx context.Context, id PackageID) (func(), error) {
	unlock, err := c.locks.Lock(ctx, pkgKey(id), func() {
		c.waits.Add(1)
		c.log.Debug("waiting for another process installing the package", "provider", id.Provider.String(), "version", id.Version, "platform", id.Platform)
	})
	if err != nil {
		return nil, fmt.Errorf("lock package %s: %w", id, err)
	}
	return unlock, nil
}

// install takes the package's flock and installs the package unless
// another process did so while this one waited. An entry that no longer
// matches its install record, or has none the cache can prove it wrote,
// is removed and installed afresh from its source: its bytes alone are
// never trusted. In a shared cache every entry found is verified against
// its source (confirm).
func (c *Cache) install(ctx context.Context, id PackageID) (installResult, error) {
	unlock, err := c.lockPackage(ctx, id)
	if err != nil {
		return installResult{}, err
	}
	defer unlock()

	if pkg, ok := c.provenPackage(id); ok && c.trust.shared {
		return installResult{pkg: pkg}, nil // another caller of this process verified it meanwhile
	}
	e := c.check(id)
	if e.err != nil {
		return installResult{}, e.err
	}
	if c.trust.shared && e.state != entryAbsent {
		return c.confirm(ctx, id, e)
	}
	if e.state == entryChanged {
		// The stamps moved (a copy, a restore, a touch); the content decides.
		e = c.reverify(id, e)
	}
	if e.state == entryOK {
		return installResult{pkg: e.pkg}, nil
	}
	if e.state == entryAbsent && !c.trust.shared {
		if pkg, ok := c.migrate(id); ok {
			return installResult{pkg: pkg}, nil
		}
	}
	return c.refill(ctx, id, e)
}

// migrate copies the package from the previous releases' layout (legacy)
// into the current one, if the cache wrote it there: every file is
// copied to a new inode (so whatever writes the old entry later, a plain
// engine unpacking into it as its plugin cache included, never changes
// the copy), the copy is verified file by file against the old install
// record (names, types, sizes, modes, SHA-256, and the h1: they make)
// and placed with its record as an install is. Anything short of that
// (no old entry, no record the cache can prove it wrote, a dir on the way
// that fails the ownership rules, a file that differs) is no migration,
// only logged: the package is then installed from its source. The old
// entry and its record are left as they are, for the previous release's
// processes that may still use the cache. A shared cache believes no
// record and never migrates. The caller holds the package lock.
func (c *Cache) migrate(id PackageID) (Package, bool) {
	oldDir := c.pkgDirIn(legacy, id)
	old := c.checkIn(legacy, id)
	why := old.why
	switch {
	case old.err != nil:
		why = old.err.Error()
	case old.state == entryAbsent:
		return Package{}, false
	case old.state == entryNoRecord:
	default:
		pkg, err := c.copyLegacy(id, oldDir, old.meta)
		if err == nil {
			c.log.Info("cache entry of the previous layout copied into the current one and verified against its install record",
				"from", oldDir, "dir", pkg.Dir)
			return pkg, true
		}
		why = err.Error()
	}
	c.log.Info("cache entry of the previous layout not used; installing the package from its source", "dir", oldDir, "problem", why)
	return Package{}, false
}

// copyLegacy copies the old entry at oldDir into a temp dir, verifies the
// copy against the old record m and puts it in place with a record of
// its own. The caller holds the package lock.
func (c *Cache) copyLegacy(id PackageID, oldDir string, m *meta) (Package, error) {
	c.sweep(id)
	tmp := filepath.Join(c.dir, stateDir, "tmp", store.TempPrefix(pkgKey(id))+"-copy.d")
	defer store.RemoveAll(tmp) // gone once placed
	if err := reflink.CopyTree(tmp, oldDir); err != nil {
		return Package{}, err
	}
	// The copy gets the recorded modes, whatever the umask; a symlink is
	// left as it is (and refused by the check below).
	for _, f := range m.Files {
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Type() == f.Mode.Type() && (fi.IsDir() || fi.Mode().IsRegular()) {
			if err := os.Chmod(p, f.Mode.Perm()); err != nil {
				return Package{}, err
			}
		}
	}
	now, why, err := verifyFiles(tmp, m.Files)
	if err != nil {
		return Package{}, err
	}
	if why != "" {
		return Package{}, errors.New(why)
	}
	h1, err := h1Of(now)
	if err != nil {
		return Package{}, err
	}
	if h1 != m.lockH1() {
		return Package{}, fmt.Errorf("its files hash to %s, its install record says %s", h1, m.lockH1())
	}
	if err := atomicfile.SyncFS(tmp); err != nil {
		return Package{}, err
	}
	nm := *m
	nm.Files, nm.H1 = now, h1
	// No proof is remembered: the record's zh: is of no zip this process
	// verified, as for an entry found in place.
	return c.commit(id, tmp, &nm)
}

// refill removes whatever is at the package's place (e says what is
// wrong with it) and installs the package from its source. The caller
// holds the package lock.
func (c *Cache) refill(ctx context.Context, id PackageID, e entry) (installResult, error) {
	dir := c.pkgDir(id)
	c.sweep(id)
	damaged := e.state != entryAbsent
	if damaged {
		c.log.Warn("cache entry does not match what was verified at install; reinstalling it from its source",
			"dir", dir, "problem", e.why)
		if err := c.discard(id); err != nil {
			return installResult{}, fmt.Errorf("%w %s (%s): remove it: %w", ErrDamagedEntry, dir, e.why, err)
		}
	}
	pkg, fbs, err := c.download(ctx, id)
	if err != nil {
		if damaged && ctx.Err() == nil {
			err = fmt.Errorf("%w %s (%s) was removed, and reinstalling it failed: %w", ErrDamagedEntry, dir, e.why, err)
		}
		return installResult{}, err
	}
	if damaged {
		c.repairs.Add(1)
	}
	return installResult{pkg: pkg, downloaded: true, fallbacks: fbs}, nil
}

// confirm verifies an entry against its source: the package is
// downloaded and verified as for a first install, and the entry is kept
// only if its files are the verified package's (names, types, sizes,
// file modes, SHA-256); otherwise it is replaced by the verified package.
// Either way the Package's hashes are this verification's, and this
// process knows the entry from then on (provenPackage). The caller holds
// the package lock.
func (c *Cache) confirm(ctx context.Context, id PackageID, e entry) (installResult, error) {
	dir := c.pkgDir(id)
	c.sweep(id)
	got, err := c.fetchVerified(ctx, id)
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
		if err := c.writeMeta(id, &m); err != nil {
			return installResult{}, err
		}
		c.log.Info("cache entry verified against a fresh download from its source", "dir", dir, "source", m.Source)
		c.remember(id, &m, true)
		return installResult{pkg: m.pkg(id, dir), fallbacks: got.fallbacks}, nil
	}
	if why == "" {
		why = "its files differ from the package its source gives"
	}
	c.log.Warn("cache entry does not match its source's package; replacing it", "dir", dir, "problem", why)
	if err := c.discard(id); err != nil {
		return installResult{}, fmt.Errorf("%w %s (%s): remove it: %w", ErrDamagedEntry, dir, why, err)
	}
	pkg, err := c.place(id, got)
	if err != nil {
		return installResult{}, installError(id, got.url, err)
	}
	c.repairs.Add(1)
	c.downloads.Add(1)
	return installResult{pkg: pkg, downloaded: true, fallbacks: got.fallbacks}, nil
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
func (c *Cache) reverify(id PackageID, e entry) entry {
	dir := c.pkgDir(id)
	now, why, err := verifyFiles(dir, e.meta.Files)
	if err != nil {
		e.why = err.Error()
		return e
	}
	if why != "" {
		e.why = why
		return e
	}
	m := *e.meta
	m.Files, m.H1 = now, e.meta.lockH1()
	if err := c.writeMeta(id, &m); err != nil {
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
func (c *Cache) discard(id PackageID) error {
	aside := filepath.Join(c.dir, stateDir, "tmp", store.TempPrefix(pkgKey(id))+"-damaged.d")
	if err := os.Rename(c.pkgDir(id), aside); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Remove(c.metaPath(id)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return store.RemoveAll(aside)
}

func (c *Cache) writeMeta(id PackageID, m *meta) error {
	mp := c.metaPath(id)
	m.Version = metaVersion
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := c.mkdirs(current.recordRel(id)); err != nil {
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
func (c *Cache) sweep(id PackageID) {
	c.sweepKey(pkgKey(id))
	// A writer killed while replacing the meta file leaves its temp file.
	metaDir := filepath.Dir(c.metaPath(id))
	leftovers, _ := filepath.Glob(filepath.Join(metaDir, atomicfile.TempPrefix+id.Platform+".json-*"))
	for _, l := range leftovers {
		_ = os.Remove(l)
	}
}

// sweepKey removes the temp files and dirs of the package key names.
// The caller holds its lock.
func (c *Cache) sweepKey(key string) {
	store.SweepKey(filepath.Join(c.dir, stateDir, "tmp"), key, func(p string, _ error) {
		c.log.Info("removing leftover of an interrupted install", "path", p)
	})
}

// download fetches, verifies, unpacks and renames the package into place.
func (c *Cache) download(ctx context.Context, id PackageID) (Package, []Fallback, error) {
	got, err := c.fetchVerified(ctx, id)
	if err != nil {
		return Package{}, nil, err
	}
	defer got.cleanup()
	pkg, err := c.place(id, got)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return Package{}, nil, installError(id, got.url, err)
	}
	c.downloads.Add(1)
	c.bytes.Add(got.bytes)
	c.log.Info("installed provider", "provider", id.Provider.String(), "version", id.Version, "platform", id.Platform, "dir", pkg.Dir, "bytes", got.bytes)
	return pkg, got.fallbacks, nil
}

// verifiedPackage is a package downloaded, verified and unpacked into a
// temp dir of the cache, with the record of what was verified.
type verifiedPackage struct {
	zip, dir string
	url      string
	bytes    int64
	meta     meta
	// fallbacks are the sources that failed before the one it came from.
	fallbacks []Fallback
}

// cleanup removes the temp files (the dir is gone once placed).
func (g *verifiedPackage) cleanup() {
	os.Remove(g.zip)
	os.RemoveAll(g.dir)
}

// fetchVerified downloads the package from the first source that lists
// it, verifies it, unpacks it into a temp dir and records it. A source
// whose Fetch fails (a mirror that went down mid-download, a package that
// fails its check) is logged and the next source that lists the version
// is tried; the error, when every one fails, names each source. The
// sources that failed before the one the package came from, in listing
// it or in fetching it, are recorded as its fallbacks. The caller holds
// the package lock and calls cleanup.
func (c *Cache) fetchVerified(ctx context.Context, id PackageID) (*verifiedPackage, error) {
	l, offers, err := c.offersFor(ctx, id)
	if err != nil {
		return nil, installError(id, "", err)
	}
	base := filepath.Join(c.dir, stateDir, "tmp", store.TempPrefix(pkgKey(id)))
	got := &verifiedPackage{zip: base + ".zip", dir: base + ".d"}
	fail := func(url string, err error) (*verifiedPackage, error) {
		got.cleanup()
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, installError(id, url, err)
	}
	zf, err := os.OpenFile(got.zip, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fail("", err)
	}
	defer zf.Close()
	used, f, fetchErrs, err := c.fetchFrom(ctx, id, offers, zf)
	if err != nil {
		return fail(f.URL, err)
	}
	src := c.sources[used]
	got.url, got.bytes = f.URL, f.Bytes
	got.fallbacks = c.fallbacks(id, l, fetchErrs, used)
	if err := unzip(zf, got.dir, unzipOptions{name: f.URL, maxSize: c.maxUnpack, hook: c.testHookUnpacking, writer: c.env.writer}); err != nil {
		return fail(f.URL, err)
	}
	if c.trust.shared {
		// The group may replace the entry: its dirs are group-writable.
		if err := groupWritableDirs(got.dir); err != nil {
			return fail(f.URL, err)
		}
	}
	files, err := recordDir(got.dir)
	if err != nil {
		return fail(f.URL, err)
	}
	h1, err := h1Of(files)
	if err != nil {
		return fail(f.URL, err)
	}
	zh := ""
	if f.SHA256 != "" { // a package packed from an unpacked mirror has no zip of its own
		zh = "zh:" + f.SHA256
	}
	got.meta = meta{Hashes: sortedUnique(append([]string{h1}, f.LockHashes...)), Zip: zh, Source: src.String(), H1: h1, Files: files}
	return got, nil
}

// place writes the record of a verified package, then renames the
// package into place: whoever sees the package sees its record. Renaming
// the dir leaves its files' stamps as recorded. The caller holds the
// package lock.
func (c *Cache) place(id PackageID, got *verifiedPackage) (Package, error) {
	pkg, err := c.commit(id, got.dir, &got.meta)
	if err != nil {
		return Package{}, err
	}
	c.remember(id, &got.meta, true)
	return pkg, nil
}

// commit writes the record m, then renames the package dir tmp into
// place. The caller holds the package lock, has made tmp durable and
// has made sure nothing is in place.
func (c *Cache) commit(id PackageID, tmp string, m *meta) (Package, error) {
	if err := c.writeMeta(id, m); err != nil {
		return Package{}, err
	}
	final := c.pkgDir(id)
	if err := c.mkdirs(current.entryRel(id)); err != nil {
		return Package{}, err
	}
	if err := store.Commit(tmp, final); err != nil {
		return Package{}, fmt.Errorf("move package into place: %w", err)
	}
	return m.pkg(id, final), nil
}

// offersFor returns the provider's listing and the sources that list the
// package's version, in order, each with the version as it spells it.
func (c *Cache) offersFor(ctx context.Context, id PackageID) (*listing, []offer, error) {
	l, err := c.listing(ctx, id.Provider)
	if err != nil {
		return nil, nil, err
	}
	ofs, ok := l.offers[id.Version]
	if !ok {
		return nil, nil, fmt.Errorf("%w: version %s of %s is offered by none of the sources (%s); available versions: %s",
			ErrLockedVersion, id.Version, id.Provider, c.sourceNames(), listVersions(l.versions))
	}
	return l, ofs, nil
}

// fallbacks lists, in the sources' order, every source ahead of used
// (the index of the one the package id came from) that failed: to list the provider
// (l.failed) or to deliver the package (fetchErrs, by source index). A
// source ahead that listed the provider without this version, or does
// not know it, did not fail.
func (c *Cache) fallbacks(id PackageID, l *listing, fetchErrs map[int]error, used int) []Fallback {
	var out []Fallback
	for i, s := range c.sources[:used] {
		err, listing := l.failed[i]
		if !listing {
			if err = fetchErrs[i]; err == nil {
				continue
			}
		}
		out = append(out, Fallback{Package: id, Source: s.String(), Listing: listing, Err: scrubURLs(err.Error()), Used: c.sources[used].String()})
	}
	return out
}

// fetchFrom fetches the package into zf from the first of offers whose
// Fetch succeeds and returns that source (its index in c.sources) and
// what it said. A failure
// other than the context's is logged (Warn) and the next offer tried,
// zf started over; the error of the last names every source that failed
// (a single source's error is returned as it is). On success it also
// returns the error of each source that failed before, by its index in
// c.sources.
func (c *Cache) fetchFrom(ctx context.Context, id PackageID, offers []offer, zf *os.File) (int, Fetched, map[int]error, error) {
	var errs []error
	var f Fetched
	failed := map[int]error{}
	for i, o := range offers {
		src := c.sources[o.source]
		if i > 0 {
			if err := zf.Truncate(0); err != nil {
				return -1, f, nil, err
			}
			if _, err := zf.Seek(0, io.SeekStart); err != nil {
				return -1, f, nil, err
			}
		}
		c.log.Info("downloading provider", "provider", id.Provider.String(), "version", id.Version, "platform", id.Platform, "source", src.String())
		// The source gets the version as it listed it, and the cache's
		// HTTP client and limits if it is a built-in one.
		var err error
		f, err = src.Fetch(withEnv(ctx, c.env), PackageID{Provider: id.Provider, Version: o.spelled, Platform: id.Platform}, zf)
		if err == nil {
			return o.source, f, failed, nil
		}
		if ctx.Err() != nil || len(offers) == 1 {
			return -1, f, nil, err
		}
		failed[o.source] = err
		errs = append(errs, fmt.Errorf("%s: %w", src, err))
		if i+1 < len(offers) {
			c.log.Warn("source failed to deliver the package; trying the next source that offers it",
				"provider", id.Provider.String(), "version", id.Version, "platform", id.Platform,
				"source", src.String(), "next", c.sources[offers[i+1].source].String(), "error", err)
		}
	}
	return -1, f, nil, errors.Join(errs...)
}

// installError is the InstallError of the package id.
func installError(id PackageID, url string, err error) *InstallError {
	return &InstallError{Provider: id.Provider, Version: id.Version, Platform: id.Platform, URL: url, Err: err}
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
