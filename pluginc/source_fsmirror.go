package pluginc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FilesystemMirror returns a Source reading a Terraform filesystem mirror
// in both of Terraform's layouts: packed,
// DIR/HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip, and
// unpacked, DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/ (the layout of this
// cache, so one cache can serve another). A version offered in both is
// taken from its zip. Local packages carry no signature; their lock file
// entry is the h1: hash alone, as Terraform records it.
func FilesystemMirror(dir string) Source { return fsMirror{dir: dir} }

type fsMirror struct{ dir string }

// String names the mirror directory.
func (m fsMirror) String() string { return "filesystem mirror " + m.dir }

func (m fsMirror) pkgDir(p Provider) string {
	return filepath.Join(m.dir, p.Hostname, p.Namespace, p.Type)
}

// Versions lists the versions of p in either layout.
func (m fsMirror) Versions(_ context.Context, p Provider) ([]string, error) {
	ents, err := os.ReadDir(m.pkgDir(p))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	prefix := "terraform-provider-" + p.Type + "_"
	seen := map[string]bool{}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if unpackedVersion(m.pkgDir(p), name) {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
			continue
		}
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".zip") {
			continue
		}
		// VERSION_OS_ARCH: the version itself never contains "_".
		rest := strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".zip")
		vs, _, ok := strings.Cut(rest, "_")
		if !ok || seen[vs] {
			continue
		}
		seen[vs] = true
		out = append(out, vs)
	}
	return out, nil
}

// Fetch copies the package's zip, or packs its unpacked dir.
func (m fsMirror) Fetch(ctx context.Context, id PackageID, dst *os.File) (Fetched, error) {
	p := id.Provider
	path := filepath.Join(m.pkgDir(p), "terraform-provider-"+p.Type+"_"+id.Version+"_"+id.Platform+".zip")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return m.fetchUnpacked(ctx, id, dst)
	}
	if err != nil {
		return Fetched{URL: path}, fmt.Errorf("%w: %v", ErrDownload, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Fetched{URL: path}, fmt.Errorf("%w: %v", ErrDownload, err)
	}
	n, sum, err := copyHashed(ctx, path, dst, f, fi.Size())
	return Fetched{URL: path, Bytes: n, SHA256: sum}, err
}

// fetchUnpacked packs the unpacked layout's package dir into dst. The
// zip is made here, not distributed by anyone, so it has no zh: hash to
// record: the package's h1: is its identity, as Terraform records it.
func (m fsMirror) fetchUnpacked(ctx context.Context, id PackageID, dst *os.File) (Fetched, error) {
	env := envFrom(ctx)
	dir := filepath.Join(m.pkgDir(id.Provider), id.Version, id.Platform)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Fetched{URL: dir}, fmt.Errorf("%w: %s has no package for this platform", ErrNotFound, m)
	}
	n, err := zipDir(ctx, dir, env.writer(dst))
	if err != nil {
		if ctx.Err() != nil {
			return Fetched{URL: dir, Bytes: n}, ctx.Err()
		}
		return Fetched{URL: dir, Bytes: n}, fmt.Errorf("pack %s: %w", dir, err)
	}
	return Fetched{URL: dir, Bytes: n}, nil
}
