package pluginc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-version"
)

// FilesystemMirror returns a Source reading Terraform's packed filesystem
// mirror layout: DIR/HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip.
// Local archives carry no signature; their lock file entry is the h1: hash
// alone, as Terraform records it.
func FilesystemMirror(dir string) Source { return fsMirror{dir: dir} }

type fsMirror struct{ dir string }

// String names the mirror directory.
func (m fsMirror) String() string { return "filesystem mirror " + m.dir }

func (m fsMirror) pkgDir(p Provider) string {
	return filepath.Join(m.dir, p.Hostname, p.Namespace, p.Type)
}

func (m fsMirror) versions(_ context.Context, _ *fetchEnv, p Provider) ([]*version.Version, error) {
	ents, err := os.ReadDir(m.pkgDir(p))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	prefix := "terraform-provider-" + p.Type + "_"
	seen := map[string]bool{}
	var out []*version.Version
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".zip") {
			continue
		}
		// VERSION_OS_ARCH: the version itself never contains "_".
		rest := strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".zip")
		vs, _, ok := strings.Cut(rest, "_")
		if !ok || seen[vs] {
			continue
		}
		v, err := parseVersion(vs)
		if err != nil {
			continue
		}
		seen[vs] = true
		out = append(out, v)
	}
	return out, nil
}

func (m fsMirror) fetch(ctx context.Context, _ *fetchEnv, p Provider, v *version.Version, platform string, dst *os.File) (fetched, error) {
	path := filepath.Join(m.pkgDir(p), "terraform-provider-"+p.Type+"_"+v.Original()+"_"+platform+".zip")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return fetched{url: path}, fmt.Errorf("%w: %s has no package for this platform", ErrNotFound, m)
	}
	if err != nil {
		return fetched{url: path}, fmt.Errorf("%w: %v", ErrDownload, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fetched{url: path}, fmt.Errorf("%w: %v", ErrDownload, err)
	}
	n, sum, err := copyHashed(ctx, path, dst, f, fi.Size())
	return fetched{url: path, bytes: n, sha256: sum}, err
}
