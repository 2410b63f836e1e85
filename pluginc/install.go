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

// meta is what the cache remembers about an installed package besides its
// files; it lives outside the package dir so it never changes the h1: hash.
type meta struct {
	Hashes []string `json:"hashes"`
	Zip    string   `json:"zip"` // zh: of the zip it was unpacked from
	Source string   `json:"source"`
}

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

// ensurePackage returns the package, installing it if it is absent.
func (c *Cache) ensurePackage(ctx context.Context, p Provider, v *version.Version, plat string) (Package, error) {
	if pkg, ok := c.lookup(p, v, plat); ok {
		c.hits.Add(1)
		return pkg, nil
	}
	key := pkgKey(p, v, plat)
	for {
		c.mu.Lock()
		f, follower := c.flights[key]
		if !follower {
			f = &flight{done: make(chan struct{})}
			c.flights[key] = f
		}
		c.mu.Unlock()

		if !follower {
			// The leader installs in its own goroutine, so nothing outlives
			// this call, and publishes the result to whoever joined.
			res, err := c.install(ctx, p, v, plat)
			f.res, f.err = res, err
			c.mu.Lock()
			delete(c.flights, key)
			c.mu.Unlock()
			close(f.done)
			if err != nil {
				return Package{}, err
			}
			if !res.downloaded {
				c.hits.Add(1)
			}
			return res.pkg, nil
		}

		select {
		case <-ctx.Done():
			// A follower owns nothing, so it can leave at once.
			return Package{}, ctx.Err()
		case <-f.done:
		}
		if f.err != nil {
			// The leader's context ended, not ours: try again, maybe as leader.
			if ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
				continue
			}
			return Package{}, f.err
		}
		c.hits.Add(1)
		return f.res.pkg, nil
	}
}

// flight is one in-process install that other callers wait for. It does
// what x/sync/singleflight does, except that the leader runs in the
// caller's goroutine (DoChan would leave it running after a cancelled
// caller returned) while followers can still give up on their own context.
type flight struct {
	done chan struct{}
	res  installResult
	err  error
}

type installResult struct {
	pkg        Package
	downloaded bool
}

// lookup returns the package if its directory is in place. The directory is
// renamed into place last, so its presence means the package is complete.
func (c *Cache) lookup(p Provider, v *version.Version, plat string) (Package, bool) {
	dir := c.pkgDir(p, v, plat)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return Package{}, false
	}
	pkg := Package{Provider: p, Version: v.String(), Platform: plat, Dir: dir}
	b, err := os.ReadFile(c.metaPath(p, v, plat))
	var m meta
	if err == nil && json.Unmarshal(b, &m) == nil && len(m.Hashes) > 0 {
		pkg.Hashes, pkg.zipHash = m.Hashes, m.Zip
		return pkg, true
	}
	// The meta file is written before the rename, so this only happens if
	// someone removed it; the h1: hash can always be recomputed.
	h1, err := hashDir(dir)
	if err != nil {
		return Package{}, false
	}
	pkg.Hashes = []string{h1}
	return pkg, true
}

// install takes the package's flock and installs the package unless
// another process did so while this one waited.
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

	if pkg, ok := c.lookup(p, v, plat); ok {
		return installResult{pkg: pkg}, nil
	}
	c.sweep(p, v, plat)
	pkg, err := c.download(ctx, p, v, plat)
	if err != nil {
		return installResult{}, err
	}
	return installResult{pkg: pkg, downloaded: true}, nil
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
	if err := unzip(zf, unpackDir, c.testHookUnpacking); err != nil {
		return fail(f.url, err)
	}
	h1, err := hashDir(unpackDir)
	if err != nil {
		return fail(f.url, err)
	}
	if len(f.wantH1) > 0 && !slices.Contains(f.wantH1, h1) {
		return fail(f.url, fmt.Errorf("%w: package hash %s is none of the mirror's hashes %s", ErrChecksum, h1, strings.Join(f.wantH1, ", ")))
	}
	hashes := sortedUnique(append([]string{h1}, f.lockExtra...))

	// Meta first, then the package: whoever sees the package sees its meta.
	mp := c.metaPath(p, v, plat)
	zh := "zh:" + f.sha256
	mb, _ := json.Marshal(meta{Hashes: hashes, Zip: zh, Source: src.String()})
	if err := os.MkdirAll(filepath.Dir(mp), 0o755); err != nil {
		return fail(f.url, err)
	}
	if err := atomicfile.WriteFile(mp, mb, 0o644); err != nil {
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
	l := c.listing(ctx, p)
	if l.err != nil {
		return nil, l.err
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
