package pluginc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// proof is what this process itself has verified about an entry: the h1:
// of its files, hashed here, and, when it downloaded and verified the
// package from its source, the zh: of that zip and the lock file hashes
// the source vouched for. It holds while the entry's files are still the
// ones it was made from (files, stamps included).
type proof struct {
	files      treesum.Tree
	h1         string
	zip        string   // zh: of the zip this process downloaded and verified; "" if none
	hashes     []string // lock file hashes this process verified
	fromSource bool     // downloaded and verified from the source by this process
}

// matches reports whether the proof is one of the locked hashes: the h1:
// of the files or the zh: of the very zip this process verified, as
// Terraform checks a package. Another platform's zh:, or any hash only a
// record claims, is no proof.
func (pr proof) matches(locked []string) bool {
	for _, l := range locked {
		if l == pr.h1 || (pr.zip != "" && l == pr.zip) {
			return true
		}
	}
	return false
}

// remember keeps what this process verified about an entry.
func (c *Cache) remember(id PackageID, m *meta, fromSource bool) {
	pr := proof{files: m.Files, h1: m.H1, hashes: m.Hashes, fromSource: fromSource}
	if fromSource {
		pr.zip = m.Zip
	}
	c.mu.Lock()
	c.proofs[pkgKey(id)] = pr
	c.mu.Unlock()
}

// proven returns this process's proof for the entry if the entry is
// still what the proof was made from (no file or dir changed, stamps
// included) and every dir on the way to it passes the ownership rules.
func (c *Cache) proven(id PackageID) (proof, bool) {
	c.mu.Lock()
	pr, ok := c.proofs[pkgKey(id)]
	c.mu.Unlock()
	if !ok || c.checkInside(current.entryRel(id)) != nil {
		return proof{}, false
	}
	if _, cs, err := treesum.Check(c.pkgDir(id), pr.files); err != nil || len(cs) > 0 {
		return proof{}, false
	}
	return pr, true
}

// provenPackage returns the package if this process downloaded and
// verified it from its source and it is unchanged since.
func (c *Cache) provenPackage(id PackageID) (Package, bool) {
	pr, ok := c.proven(id)
	if !ok || !pr.fromSource {
		return Package{}, false
	}
	return Package{Provider: id.Provider, Version: id.Version, Platform: id.Platform, Dir: c.pkgDir(id), Hashes: pr.hashes, zipHash: pr.zip}, true
}

// pkg is the Package an install record describes.
func (m *meta) pkg(id PackageID, dir string) Package {
	return Package{Provider: id.Provider, Version: id.Version, Platform: id.Platform, Dir: dir, Hashes: m.Hashes, zipHash: m.Zip}
}

// matchLock checks a package against a lock file's hashes for it, as
// terraform checks a package against a committed .terraform.lock.hcl:
// the h1: of its files, hashed by this process, or the zh: of a zip this
// process downloaded and verified. An install record's claims never
// count. A package proven by neither is verified against its source
// (confirm), which replaces an entry that is not the source's package;
// if the source's package matches none of the hashes either, the
// package is refused (ErrChecksum), as terraform init refuses it. The
// package returned has every locked hash, none dropped or replaced,
// and besides them only hashes this process verified.
func (c *Cache) matchLock(ctx context.Context, pkg Package, locked []string) (Package, error) {
	id := pkg.id()
	pr, ok := c.proven(id)
	if !ok {
		files, err := recordDir(pkg.Dir)
		if err == nil {
			if h1, err := h1Of(files); err == nil {
				pr = proof{files: files, h1: h1, hashes: []string{h1}}
				c.mu.Lock()
				c.proofs[pkgKey(id)] = pr
				c.mu.Unlock()
			}
		}
	}
	if !pr.matches(locked) && !pr.fromSource {
		c.log.Info("cache entry matches none of the lock file's hashes by its files; verifying it against its source",
			"dir", pkg.Dir, "h1", pr.h1)
		res, _, err := c.installFlights.Do(ctx, pkgKey(id)+"#confirm", "another Ensure call", func() (installResult, error) {
			unlock, err := c.lockPackage(ctx, id)
			if err != nil {
				return installResult{}, err
			}
			defer unlock()
			if pkg, ok := c.provenPackage(id); ok {
				return installResult{pkg: pkg}, nil
			}
			e := c.check(id)
			switch {
			case e.err != nil:
				return installResult{}, e.err
			case e.state == entryAbsent:
				return c.refill(ctx, id, e)
			}
			return c.confirm(ctx, id, e)
		})
		if err != nil {
			return Package{}, err
		}
		reportFallbacks(ctx, res.fallbacks)
		h1 := ""
		for _, h := range res.pkg.Hashes {
			if strings.HasPrefix(h, "h1:") {
				h1 = h
			}
		}
		pr = proof{h1: h1, zip: res.pkg.zipHash, hashes: res.pkg.Hashes, fromSource: true}
		pkg.Hashes, pkg.zipHash = res.pkg.Hashes, res.pkg.zipHash
	}
	if !pr.matches(locked) {
		what := "its files hash to " + pr.h1
		if pr.fromSource {
			what = fmt.Sprintf("the package its source gives hashes to %s", strings.Join(nonEmpty(pr.h1, pr.zip), " and "))
		}
		return Package{}, installError(id, pkg.Dir, fmt.Errorf("%w: %s, which matches none of the hashes recorded in the lock file (%s)", ErrChecksum, what, strings.Join(locked, ", ")))
	}
	pkg.Hashes = sortedUnique(append(slices.Clone(locked), pr.hashes...))
	return pkg, nil
}

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

// groupWritableDirs makes every dir of an unpacked package group-writable,
// so another member of a shared cache's group can replace the entry.
func groupWritableDirs(dir string) error {
	files, err := treesum.Scan(dir)
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o775); err != nil {
		return err
	}
	for _, f := range files {
		if f.Mode.IsDir() {
			if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(f.Path)), 0o775); err != nil {
				return err
			}
		}
	}
	return nil
}
