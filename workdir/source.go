package workdir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// lockFileName is Terraform's dependency lock file. It is instance-owned in
// the workdir; the component's copy in the source only seeds it.
const lockFileName = ".terraform.lock.hcl"

// entry is one regular file of the source set.
type entry struct {
	rel  string // slash path relative to the layout root (the common ancestor)
	abs  string // path in the source tree
	perm fs.FileMode
	size int64
	sum  [sha256.Size]byte
}

// skipDir reports directories never taken from the source: Terraform's
// own data and local workspace state belong to whoever ran it there, not to
// the component, and VCS metadata is not configuration.
func skipDir(name string) bool {
	return name == ".terraform" || name == ".git" || name == "terraform.tfstate.d"
}

// instanceOwned reports file names that belong to the instance: local state
// and its backups, and saved plans. They are never copied from the source
// and never deleted or replaced by a refresh.
func instanceOwned(name string) bool {
	return strings.HasPrefix(name, "terraform.tfstate") || strings.HasSuffix(name, ".tfplan")
}

// collect walks dirs (slash paths relative to base) and returns every
// source file, sorted by rel, with its content digest. skip is a directory
// (the manager's root) never to enter, in case it lies inside the source.
func collect(base string, dirs []string, skip string) ([]entry, error) {
	seen := make(map[string]bool)
	buf := make([]byte, 32<<10)
	var out []entry
	for _, d := range dirs {
		top := filepath.Join(base, filepath.FromSlash(d))
		// WalkDir does not follow a symlinked top; the layout keeps the
		// link's own position.
		real, err := filepath.EvalSymlinks(top)
		if err != nil {
			return nil, fmt.Errorf("read source %s: %w", top, err)
		}
		err = filepath.WalkDir(real, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				if p != real && skipDir(de.Name()) || p == skip {
					return filepath.SkipDir
				}
				return nil
			}
			if instanceOwned(de.Name()) {
				return nil
			}
			r, err := filepath.Rel(real, p)
			if err != nil {
				return err
			}
			rel := path.Join(d, filepath.ToSlash(r))
			if seen[rel] {
				return nil
			}
			fi, err := os.Stat(p) // follows symlinks: a linked file is materialized as its content
			if err != nil || !fi.Mode().IsRegular() {
				return nil // dangling links, links to dirs, sockets: nothing terraform reads as a file
			}
			seen[rel] = true
			e := entry{rel: rel, abs: p, perm: fi.Mode().Perm(), size: fi.Size()}
			if e.sum, err = fileSumBuf(p, buf); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read source %s: %w", top, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

func fileSumBuf(p string, buf []byte) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(p)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	// Hide WriterTo so the shared buffer is used instead of a fresh one.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return sum, fmt.Errorf("read %s: %w", p, err)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// setHash digests the layout and every file's path, permissions and
// content. Equal digests mean an identical materialized tree.
func setHash(component string, dirs []string, files []entry) string {
	h := sha256.New()
	fmt.Fprintf(h, "tfisolate-workdir-v1\x00%s\x00%s\n", component, strings.Join(dirs, "\x00"))
	for _, e := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%x\n", e.rel, e.perm, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// isLockFile reports whether rel is a dependency lock file in the source set.
func isLockFile(rel string) bool { return path.Base(rel) == lockFileName }
