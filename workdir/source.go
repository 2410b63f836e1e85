package workdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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

// instanceOwned reports file names that belong to the instance: state-like
// files (see stateLike) and saved plans. They are never copied from the
// source and never deleted or replaced by a refresh.
func instanceOwned(name string) bool {
	return stateLike(name) || strings.HasSuffix(name, ".tfplan")
}

// stateLike reports names of local state and what terraform derives from
// it: terraform.tfstate*, any *.tfstate (a custom local backend path, a
// `terraform state pull` kept around) and its .backup, lock info and
// timestamped backups.
func stateLike(name string) bool {
	return strings.HasPrefix(name, "terraform.tfstate") || strings.HasSuffix(name, ".tfstate") || strings.Contains(name, ".tfstate.")
}

// collect walks dirs (slash paths relative to base) and returns every
// source file, sorted by rel, with its content digest. skip is a directory
// (the manager's root) never to enter, in case it lies inside the source.
func collect(ctx context.Context, base string, dirs []string, skip string) ([]entry, error) {
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
			if e.sum, e.size, err = fileSum(ctx, p, buf); err != nil {
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

// errNotRegular refuses to read a FIFO, socket or device where a file was
// expected.
var errNotRegular = errors.New("not a regular file")

// fileSum returns the SHA-256 and size of the regular file p. buf is
// scratch space, so one buffer serves a whole walk.
func fileSum(ctx context.Context, p string, buf []byte) ([sha256.Size]byte, int64, error) {
	f, err := openRegular(p)
	if err != nil {
		return [sha256.Size]byte{}, 0, err
	}
	defer f.Close()
	sum, n, err := sumReader(ctx, f, buf)
	if err != nil {
		return sum, n, fmt.Errorf("read %s: %w", p, err)
	}
	return sum, n, nil
}

// sumReader hashes r to its end, checking ctx between reads so a huge
// file cannot hold the instance lock past the caller's deadline.
func sumReader(ctx context.Context, r io.Reader, buf []byte) (sum [sha256.Size]byte, n int64, err error) {
	h := sha256.New()
	// Hide WriterTo so the shared buffer is used instead of a fresh one.
	n, err = io.CopyBuffer(h, ctxReader{ctx, r}, buf)
	if err != nil {
		return sum, n, err
	}
	h.Sum(sum[:0])
	return sum, n, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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
