package pluginc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// trust says whose writes the cache believes: the effective user's and
// root's, and, with WithSharedGroup, those of the members of one group
// (whose entries are then verified against their source before use).
type trust struct {
	euid   int
	shared bool
	gid    int // the shared group, when shared
}

// pathRole is where a path sits, which decides what it may be.
type pathRole int

const (
	roleParent pathRole = iota // a directory above the cache root
	roleRoot                   // the cache root
	roleInside                 // a directory inside the cache, on the way to an entry or a record
)

// unsafeWhy says why a path with this info cannot be trusted in its role,
// or "" when it can. Directories above the root may be sticky and
// writable by everyone, as /tmp is: the sticky bit keeps others from
// renaming or removing what is ours in them. The root and everything in
// it may not.
func (tr trust) unsafeWhy(fi fs.FileInfo, role pathRole) string {
	uid, gid, ok := owner(fi)
	if !ok {
		return "" // no owners on this platform (see owner)
	}
	if !fi.IsDir() {
		return "it is a " + typeName(fi.Mode()) + ", not a directory"
	}
	group := tr.shared && gid == tr.gid
	sticky := role == roleParent && fi.Mode()&fs.ModeSticky != 0
	switch {
	case uid != tr.euid && uid != 0 && !group:
		return fmt.Sprintf("it is owned by uid %d, neither you (uid %d) nor root", uid, tr.euid)
	case fi.Mode().Perm()&0o002 != 0 && !sticky:
		return "others can write to it"
	case fi.Mode().Perm()&0o020 != 0 && !group && !sticky:
		if tr.shared {
			return fmt.Sprintf("its group (gid %d) can write to it, and it is not the shared group (gid %d)", gid, tr.gid)
		}
		return fmt.Sprintf("its group (gid %d) can write to it", gid)
	}
	return ""
}

// foreignWhy says why a file or directory in the cache was not written by
// the effective user or root (its owner, or others being able to write to
// it), or "" when it was. Shared caches do not ask: their entries are
// verified against their source instead.
func (tr trust) foreignWhy(fi fs.FileInfo) string {
	uid, _, ok := owner(fi)
	if !ok || tr.shared {
		return ""
	}
	switch {
	case uid != tr.euid && uid != 0:
		return fmt.Sprintf("is owned by uid %d, neither you (uid %d) nor root", uid, tr.euid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("has mode %s: others could have written it", fi.Mode())
	}
	return ""
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

// unsafePath returns the error for a path that fails its role.
func (tr trust) unsafePath(path string, fi fs.FileInfo, why string) error {
	uid, gid, _ := owner(fi)
	return &UnsafePathError{Path: path, UID: uid, GID: gid, Mode: fi.Mode(), Why: why, Shared: tr.shared}
}

// checkPath checks one path in its role; stat follows links (the root,
// and the dirs above it, may be reached through a link), lstat does not.
// A missing path is no error: there is nothing to trust yet.
func (tr trust) checkPath(path string, role pathRole, follow bool) error {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pluginc: check %s: %w", path, err)
	}
	if why := tr.unsafeWhy(fi, role); why != "" {
		return tr.unsafePath(path, fi, why)
	}
	return nil
}

// checkRoot checks the cache root and every directory above it, both as
// it resolves and as the path reads (so a link's own dir counts).
func (tr trust) checkRoot(root string) error {
	var paths [][]string
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		paths = append(paths, ancestors(real))
	}
	paths = append(paths, ancestors(root))
	for i, anc := range paths {
		for j, p := range anc {
			role := roleParent
			if j == len(anc)-1 {
				role = roleRoot
			}
			// The path as given goes through links; the resolved one has none.
			if err := tr.checkPath(p, role, i == len(paths)-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// ancestors returns /, /a, /a/b, ... up to and including the absolute
// path p.
func ancestors(p string) []string {
	var out []string
	for d := p; ; d = filepath.Dir(d) {
		out = append(out, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// checkInside checks the root and every directory from it down to the
// path rel (slash- or OS-separated, relative to the root), the last
// included: the dirs on the way to an entry or a record. It stops at the
// first one that does not exist.
func (c *Cache) checkInside(rel string) error {
	if err := c.trust.checkPath(c.dir, roleRoot, true); err != nil {
		return err
	}
	p := c.dir
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pluginc: check %s: %w", p, err)
		}
		if why := c.trust.unsafeWhy(fi, roleInside); why != "" {
			return c.trust.unsafePath(p, fi, why)
		}
	}
	return nil
}
