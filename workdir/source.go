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
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/treesum"
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

// statePaths are the places the component's local backend keeps state,
// as clean slash paths relative to the layout root (which is also the
// layout under src/): instance-owned wherever they are, never copied from
// the source, never deleted by a refresh. The default places
// (terraform.tfstate*, terraform.tfstate.d/) are covered by their names.
type statePaths struct {
	files map[string]bool
	dirs  []string
}

// statePathsOf places the state paths of backends bs (see stateBackends)
// for a component at the slash path component. Absolute paths and paths
// outside the layout root are not part of any source set or workdir, so
// they need no entry.
func statePathsOf(component string, bs ...modtree.Backend) statePaths {
	sp := statePaths{files: map[string]bool{}}
	place := func(p string) (string, bool) {
		if p == "" || filepath.IsAbs(p) {
			return "", false
		}
		r := path.Join(component, filepath.ToSlash(p))
		return r, r != "." && r != ".." && !strings.HasPrefix(r, "../")
	}
	for _, b := range bs {
		if !b.Local() {
			continue
		}
		if r, ok := place(b.Path); ok {
			dir, base := path.Split(r)
			sp.files[r] = true
			sp.files[r+".backup"] = true
			sp.files[dir+"."+base+".lock.info"] = true // the local backend's lock beside its state
		}
		if r, ok := place(b.WorkspaceDir); ok {
			sp.dirs = append(sp.dirs, r)
		}
	}
	return sp
}

// has reports whether rel is one of the state paths or lies under one of
// the workspace dirs.
func (sp statePaths) has(rel string) bool {
	if sp.files[rel] {
		return true
	}
	for _, d := range sp.dirs {
		if withinSlash(d, rel) {
			return true
		}
	}
	return false
}

// scan is what collect found in the source.
type scan struct {
	ents       []entry  // the files to materialize, sorted by rel
	state      []string // source paths of state-like files and dirs left out
	irregular  []string // source paths of FIFOs, sockets and devices left out
	unfollowed []string // source paths of symlinked dirs not followed (loops, the workdir root)
}

// collector walks the source set.
type collector struct {
	ctx    context.Context
	sums   *treesum.Memo // digests of files read before; nil: read every file
	root   string        // the manager's root, symlinks resolved: never entered
	owned  statePaths
	inputs map[string]bool // state-like files read as inputs: copied
	budget budget          // the most the set may hold
	bytes  int64           // the sizes of the files taken so far
	buf    []byte
	seen   map[string]bool
	set    scan
}

// collect walks dirs (slash paths relative to base) and returns every
// source file with its content digest. Symlinks are followed: a linked
// file is materialized as its content and a linked directory as a real
// directory at the link's position (a module dir reached through a link
// must exist in the workdir for terraform to read it), except links that
// lead back to a directory on their own path (a loop) and anything inside
// root (the manager's root, symlinks resolved), in case it lies in the
// source. Nothing but regular files is ever opened. State-like files are
// left out, except inputs (slash paths under base: state files the
// configuration reads through a local terraform_remote_state, see
// inputsOf), which are taken like any other file. A file whose digest
// sums remembers for its current version (see treesum.Memo) is not read
// again; sums may be nil.
func collect(ctx context.Context, base string, dirs []string, root string, owned statePaths, inputs map[string]bool, lim budget, sums *treesum.Memo) (*scan, error) {
	c := &collector{ctx: ctx, sums: sums, root: root, owned: owned, inputs: inputs, budget: lim, buf: make([]byte, 32<<10), seen: map[string]bool{}}
	for _, d := range dirs {
		top := filepath.Join(base, filepath.FromSlash(d))
		real, err := filepath.EvalSymlinks(top)
		if err != nil {
			return nil, fmt.Errorf("read source %s: %w", top, err)
		}
		if within(root, real) {
			c.set.unfollowed = append(c.set.unfollowed, top)
			continue
		}
		if err := c.walk(real, d, []string{real}); err != nil {
			return nil, err
		}
	}
	sort.Slice(c.set.ents, func(i, j int) bool { return c.set.ents[i].rel < c.set.ents[j].rel })
	return &c.set, nil
}

// walk reads the directory real (symlinks resolved) whose place in the
// layout is rel; stack holds the resolved directories above it.
func (c *collector) walk(real, rel string, stack []string) error {
	ents, err := os.ReadDir(real)
	if err != nil {
		return fmt.Errorf("read source %s: %w", real, err)
	}
	for _, de := range ents {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		name := de.Name()
		p := filepath.Join(real, name)
		r := path.Join(rel, name)
		fi, err := os.Stat(p) // follows links
		if err != nil {
			continue // a dangling link or a file gone since the listing: nothing terraform reads
		}
		switch {
		case fi.IsDir():
			if name == "terraform.tfstate.d" || c.owned.has(r) {
				c.set.state = append(c.set.state, p)
				continue
			}
			if skipDir(name) {
				continue
			}
			target := p
			if de.Type()&fs.ModeSymlink != 0 {
				if target, err = filepath.EvalSymlinks(p); err != nil {
					continue
				}
				if slices.ContainsFunc(stack, func(s string) bool { return within(target, s) }) {
					c.set.unfollowed = append(c.set.unfollowed, p)
					continue // a loop: following it would never end
				}
			}
			if within(c.root, target) {
				c.set.unfollowed = append(c.set.unfollowed, p)
				continue
			}
			if err := c.walk(target, r, append(slices.Clip(stack), target)); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			input := c.inputs[r] && !c.owned.has(r)
			if !input && (stateLike(name) || c.owned.has(r)) {
				c.set.state = append(c.set.state, p)
				continue
			}
			if !input && instanceOwned(name) || c.seen[r] {
				continue
			}
			if err := c.spend(p, fi.Size()); err != nil {
				return err
			}
			sum, size, err := c.sum(p, fi)
			if errors.Is(err, modtree.ErrNotRegular) {
				c.set.irregular = append(c.set.irregular, p) // replaced since the listing
				continue
			}
			if err != nil {
				return fmt.Errorf("read source %s: %w", p, err)
			}
			c.seen[r] = true
			c.set.ents = append(c.set.ents, entry{rel: r, abs: p, perm: fi.Mode().Perm(), size: size, sum: sum})
		default:
			c.set.irregular = append(c.set.irregular, p)
		}
	}
	return nil
}

// spend counts the file p of size bytes against the budget, before it is
// read: a set over the budget is refused at the file that crossed it.
func (c *collector) spend(p string, size int64) error {
	if c.budget.files > 0 && len(c.set.ents)+1 > c.budget.files {
		return fmt.Errorf("%w: %s: the source set holds more than %d files (the budget of one instance; workdir.WithBudget raises it)",
			ErrBudget, p, c.budget.files)
	}
	c.bytes += size
	if c.budget.bytes > 0 && c.bytes > c.budget.bytes {
		return fmt.Errorf("%w: %s (%d bytes): the source set holds more than %d bytes (the budget of one instance; workdir.WithBudget raises it)",
			ErrBudget, p, size, c.budget.bytes)
	}
	return nil
}

// sum returns the SHA-256 and size of the regular file p, whose stat
// (links followed) is fi: the digest c.sums remembers for that very
// version of the file, or else the file read and hashed, and then
// remembered under the stat of the file as opened (taken before its
// content is read, so a write during the read is a new version).
func (c *collector) sum(p string, fi fs.FileInfo) ([sha256.Size]byte, int64, error) {
	if sum, ok := c.sums.Lookup(p, fi); ok {
		return sum, fi.Size(), nil
	}
	start := time.Now()
	f, err := modtree.OpenRegular(p)
	if err != nil {
		return [sha256.Size]byte{}, 0, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return [sha256.Size]byte{}, 0, err
	}
	sum, size, err := sumReader(c.ctx, f, c.buf)
	if err == nil && size == opened.Size() {
		c.sums.Remember(p, opened, start, sum)
	}
	return sum, size, err
}

// fileSum returns the SHA-256 and size of the regular file p. buf is
// scratch space, so one buffer serves a whole walk.
func fileSum(ctx context.Context, p string, buf []byte) ([sha256.Size]byte, int64, error) {
	f, err := modtree.OpenRegular(p)
	if err != nil {
		return [sha256.Size]byte{}, 0, err
	}
	defer f.Close()
	return sumReader(ctx, f, buf)
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
