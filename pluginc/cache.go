package pluginc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-version"
	"golang.org/x/sync/errgroup"

	"github.com/tfisolate/tfisolate/internal/flight"
	"github.com/tfisolate/tfisolate/internal/store"
)

// stateDir holds the cache's bookkeeping inside the cache dir. Its name
// starts with a dot so Terraform, reading the cache as a filesystem mirror,
// skips it as an invalid hostname.
const stateDir = ".pluginc"

// Requirement asks for one provider.
type Requirement struct {
	Provider    Provider
	Constraints string // Terraform syntax, such as "~> 5.0"; empty means any release
	// Locked, when set, is the version from an existing lock file. It is
	// used as is (it must satisfy Constraints), so a warm cache answers
	// without touching the network.
	Locked string
	// LockedHashes, when set, are the lock file's hashes for Locked; a
	// package matching none of them is refused (ErrChecksum), as
	// terraform init refuses it. They are matched against the h1: of the
	// package's files, hashed by this process, or the zh: of a zip this
	// process downloaded and verified, never against an install record's
	// claim; the Package returned keeps every one of them in Hashes.
	LockedHashes []string
}

// Package is one installed provider package.
type Package struct {
	Provider Provider
	Version  string
	Platform string // OS_ARCH
	Dir      string // the unpacked package inside the cache
	// Hashes are the lock file hashes: h1: of this package and zh: of all
	// platforms when signed, as verified at install (in a shared cache:
	// by this process); for a requirement with LockedHashes, those
	// hashes, every one, plus only what this process verified.
	Hashes      []string
	Constraints string // the requirement's constraints in canonical form, for LockFile

	zipHash string // zh: of the zip this package came from, by its record or this process's own download; see matchLock for what counts
}

// id is the package's identity.
func (p Package) id() PackageID {
	return PackageID{Provider: p.Provider, Version: p.Version, Platform: p.Platform}
}

// Stats counts what a Cache did since Open.
type Stats struct {
	Downloads int64 // packages this process downloaded and installed, repairs included
	Bytes     int64 // bytes of those downloads
	Hits      int64 // package requests answered from the cache or by another caller's install
	Waits     int64 // times a package lock was held by another process and had to be waited for
	Retries   int64 // HTTP requests retried after a timeout, a broken transfer, 429 or 5xx
	Repairs   int64 // damaged cache entries (or entries without an install record the cache can prove it wrote) replaced by a fresh download
	// Verifies counts cached entries compared with a fresh, verified
	// download from their source: every entry's first use in a process
	// of a shared cache (WithSharedGroup), and an entry whose files match
	// none of a lock file's hashes.
	Verifies int64
}

// Cache is a provider cache in a directory shared by any number of
// processes. Its methods are safe for concurrent use.
type Cache struct {
	dir       string
	trust     trust
	locks     *store.Locks // one per package, never deleted
	sources   []Source
	platforms []string
	env       *fetchEnv
	log       *slog.Logger

	maxUnpack int64

	mu       sync.Mutex
	listings map[Provider]*listing // successful listings, kept for the Cache's life
	proofs   map[string]proof      // by pkgKey: what this process verified itself

	// In-process deduplication: one listing per provider, one install per
	// package key at a time.
	listFlights    flight.Group[*listing]
	installFlights flight.Group[installResult]

	downloads, bytes, hits, waits, retries, repairs, verifies atomic.Int64

	// testHookUnpacking, when set, runs after the first file of a package
	// has been unpacked into its temp dir. Tests use it to kill a process
	// mid-unpack.
	testHookUnpacking func()
}

// listing is the merged version list of one provider over all sources,
// fetched once per Cache.
type listing struct {
	versions []*version.Version
	// offers maps a version (normalized) to every source that offers
	// it, in the sources' order: the first is installed from, the
	// others are fallen back to when it fails.
	offers map[string][]offer
	// failed holds, by index in Cache.sources, the error of each source
	// that failed to list the provider (not one that does not know it):
	// a package installed from a later source fell back past it.
	failed map[int]error
}

// offer is a version as one source lists it.
type offer struct {
	source  int    // index in Cache.sources
	spelled string // as the source spells it, for its Fetch
}

// Open opens (creating if needed: 0700, as every missing dir above it
// that Open creates, or 2775 with WithSharedGroup) the cache rooted at
// dir. The root, every
// dir above it and every dir in it must be owned by the effective user or
// root and writable by no one else (a dir above the root may be sticky
// and writable by all, as /tmp is); otherwise Open, or the use that finds
// such a dir, fails with an *UnsafePathError naming it, its owner and its
// mode. WithSharedGroup relaxes this for one group, on purpose. On
// platforms without Unix owners and modes (Windows) nothing is checked.
func Open(dir string, opts ...Option) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("pluginc: open cache: empty directory")
	}
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("pluginc: open cache %s: option %d is nil", dir, i)
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.getenv == nil {
		cfg.getenv = os.LookupEnv
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pluginc: open cache %s: %w", dir, err)
	}
	tr := trust{euid: geteuid(), shared: cfg.shared, gid: cfg.gid}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		perm := fs.FileMode(0o700) // private, as the dirs above it that this creates
		if tr.shared {
			perm = 0o755 // setGroup makes it the group's, 2775
		}
		if err := os.MkdirAll(abs, perm); err != nil {
			return nil, fmt.Errorf("pluginc: open cache %s: %w", dir, err)
		}
		if tr.shared {
			if err := setGroup(abs, tr.gid); err != nil {
				return nil, fmt.Errorf("pluginc: open cache %s: share it with group %d: %w", dir, tr.gid, err)
			}
		}
	}
	// Checked after creating it: whoever made it first, it is checked as
	// it is now.
	if err := tr.checkRoot(abs); err != nil {
		return nil, fmt.Errorf("pluginc: open cache %s: %w", dir, err)
	}
	lockPerm := os.FileMode(0o600)
	if tr.shared {
		lockPerm = 0o644 // flock opens lock files read-only
	}
	c := &Cache{dir: abs, trust: tr, locks: store.NewLocks(filepath.Join(abs, stateDir, "locks"), lockPerm, 0)}
	for _, sub := range []string{filepath.Join(stateDir, "locks"), filepath.Join(stateDir, "tmp"), current.packages, current.records} {
		if err := c.mkdirs(sub); err != nil {
			return nil, fmt.Errorf("pluginc: open cache %s: %w", dir, err)
		}
	}
	if len(cfg.sources) == 0 {
		cfg.sources = []Source{Registry()}
	}
	if len(cfg.platforms) == 0 {
		cfg.platforms = []string{runtime.GOOS + "_" + runtime.GOARCH}
	}
	if cfg.client == nil {
		cfg.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	c.sources = cfg.sources
	c.platforms = cfg.platforms
	c.log = cfg.log
	c.maxUnpack = cfg.maxUnpack
	c.listings = map[Provider]*listing{}
	c.proofs = map[string]proof{}
	c.listFlights = flight.Group[*listing]{Forget: true}
	c.installFlights = flight.Group[installResult]{Forget: true}
	c.env = &fetchEnv{client: withSafeRedirects(cfg.client), log: cfg.log, env: cfg.getenv, cli: cfg.cli, lim: cfg.net, retries: &c.retries}
	c.sweepAll()
	return c, nil
}

// Dir returns the absolute cache directory.
func (c *Cache) Dir() string { return c.dir }

// PackagesDir returns the dir inside Dir that holds the cache's packages
// in Terraform's unpacked filesystem-mirror layout
// (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH below it): what CLIConfig hands
// Terraform as its filesystem_mirror, and what a FilesystemMirror source
// or a plain engine's filesystem_mirror block may read. Only the cache
// writes there. It is not Dir itself, since a plain terraform or tofu
// given Dir as its plugin cache unpacks into Dir's own
// HOST/NAMESPACE/TYPE/VERSION/OS_ARCH in place.
func (c *Cache) PackagesDir() string { return filepath.Join(c.dir, current.packages) }

// Stats returns the counters since Open.
func (c *Cache) Stats() Stats {
	return Stats{Downloads: c.downloads.Load(), Bytes: c.bytes.Load(), Hits: c.hits.Load(), Waits: c.waits.Load(),
		Retries: c.retries.Load(), Repairs: c.repairs.Load(), Verifies: c.verifies.Load()}
}

// Ensure makes every requirement available in the cache for every
// configured platform and returns the packages, requirement by requirement
// and platform by platform within each. Each package is downloaded at most
// once however many goroutines and processes ask for it at once; a caller
// that finds another one installing waits for it and gets the result. A
// package already in the cache is checked against its install record and
// reinstalled from its source if it no longer matches (see the package
// documentation).
func (c *Cache) Ensure(ctx context.Context, reqs ...Requirement) ([]Package, error) {
	type plan struct {
		cs     constraints
		locked *version.Version
	}
	plans := make([]plan, len(reqs))
	for i, r := range reqs {
		if r.Provider.IsZero() || r.Provider.Hostname == "" || r.Provider.Namespace == "" || r.Provider.Type == "" {
			return nil, fmt.Errorf("%w %q in requirement %d", ErrInvalidProvider, r.Provider.String(), i)
		}
		cs, err := parseConstraints(r.Constraints)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", r.Provider, err)
		}
		plans[i].cs = cs
		if r.Locked != "" {
			v, err := parseVersion(r.Locked)
			if err != nil {
				return nil, fmt.Errorf("%w: provider %s locked at %q: %v", ErrLockedVersion, r.Provider, r.Locked, err)
			}
			if !cs.allows(v) {
				return nil, fmt.Errorf("%w: provider %s is locked at %s, which does not match constraints %q",
					ErrLockedVersion, r.Provider, v, r.Constraints)
			}
			plans[i].locked = v
		}
	}
	out := make([][]Package, len(reqs))
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range reqs {
		g.Go(func() error {
			v := plans[i].locked
			if v == nil {
				l, err := c.listing(gctx, r.Provider)
				if err != nil {
					return err
				}
				if v, err = selectVersion(r.Provider, l.versions, plans[i].cs); err != nil {
					return err
				}
			}
			pkgs := make([]Package, len(c.platforms))
			for j, plat := range c.platforms {
				p, err := c.ensurePackage(gctx, PackageID{Provider: r.Provider, Version: v.String(), Platform: plat})
				if err != nil {
					return err
				}
				if len(r.LockedHashes) > 0 {
					if p, err = c.matchLock(gctx, p, r.LockedHashes); err != nil {
						return err
					}
				}
				p.Constraints = plans[i].cs.String()
				pkgs[j] = p
			}
			out[i] = pkgs
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all []Package
	for _, ps := range out {
		all = append(all, ps...)
	}
	return all, nil
}

// listing returns the merged versions of p, asking the sources once per
// Cache: concurrent callers share one listing, a successful one is kept
// and a failed one is not, so a later call retries.
func (c *Cache) listing(ctx context.Context, p Provider) (*listing, error) {
	c.mu.Lock()
	l, ok := c.listings[p]
	c.mu.Unlock()
	if ok {
		return l, nil
	}
	l, _, err := c.listFlights.Do(ctx, p.String(), "another Ensure call listing "+p.String(), func() (*listing, error) {
		l, err := c.list(ctx, p)
		if err == nil {
			c.mu.Lock()
			c.listings[p] = l
			c.mu.Unlock()
		}
		return l, err
	})
	return l, err
}

// list asks every source for the versions of p.
func (c *Cache) list(ctx context.Context, p Provider) (*listing, error) {
	l := &listing{offers: map[string][]offer{}, failed: map[int]error{}}
	var errs []error
	for i, s := range c.sources {
		vs, err := s.Versions(withEnv(ctx, c.env), p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrNotFound) {
				continue
			}
			err = fmt.Errorf("list versions of %s from %s: %w", p, s, err)
			errs = append(errs, err)
			l.failed[i] = err
			if len(c.sources) > 1 {
				// The other sources may still offer the provider: say
				// which one failed, since the error is dropped if they do.
				c.log.Warn("source failed to list versions; trying the other sources", "source", s.String(), "provider", p.String(), "error", err)
			}
			continue
		}
		for _, spelled := range vs {
			v, err := parseVersion(spelled)
			if err != nil {
				c.log.Warn("source lists an invalid version; ignoring it", "source", s.String(), "provider", p.String(), "version", spelled)
				continue
			}
			prev := l.offers[v.String()]
			if len(prev) == 0 {
				l.versions = append(l.versions, v)
			}
			if len(prev) == 0 || prev[len(prev)-1].source != i { // one offer per source, its first spelling
				l.offers[v.String()] = append(prev, offer{source: i, spelled: spelled})
			}
		}
	}
	if len(l.versions) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("%w: provider %s is offered by none of the sources (%s)", ErrNotFound, p, c.sourceNames())
	}
	return l, nil
}

func (c *Cache) sourceNames() string {
	s := ""
	for i, src := range c.sources {
		if i > 0 {
			s += ", "
		}
		s += src.String()
	}
	return s
}
