package pathtrust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Role is where a path sits, which decides what it may be.
type Role int

const (
	// Parent is a directory above a root: it may be sticky and writable
	// by everyone, as /tmp is.
	Parent Role = iota
	// Root is the directory the records live in.
	Root
	// Inside is a directory inside a root, on the way to a record.
	Inside
)

// Policy says whose writes are believed: the effective user's and
// root's, and, when Shared, those of the members of group GID.
type Policy struct {
	EUID   int  // the effective user id (-1 where there are no owners)
	Shared bool // whether group GID is trusted too
	GID    int  // the shared group, when Shared
}

// Effective is the Policy of this process: its effective user and root.
func Effective() Policy { return Policy{EUID: Geteuid()} }

// Unsafe is a path a Policy refuses to trust, with what the refusal
// names: the path, its owner, group and mode, and why.
type Unsafe struct {
	Path     string
	UID, GID int         // the path's owner and group
	Mode     fs.FileMode // the path's type and permission bits
	Why      string      // what is wrong with it
}

// Error names the path, its owner, group and mode, and what is wrong.
// Packages wrap an Unsafe in their own error type, which adds what to do.
func (u *Unsafe) Error() string {
	return fmt.Sprintf("%s (owner uid %d, group gid %d, mode %s): %s", u.Path, u.UID, u.GID, u.Mode, u.Why)
}

// UnsafeOf builds the Unsafe for path with info fi and reason why.
func UnsafeOf(path string, fi fs.FileInfo, why string) *Unsafe {
	uid, gid, _ := Owner(fi)
	return &Unsafe{Path: path, UID: uid, GID: gid, Mode: fi.Mode(), Why: why}
}

// Why says why a path with info fi cannot be trusted in its role, or ""
// when it can. Only directories can: a symlink (lstat) or a file in a
// directory's place is refused.
func (p Policy) Why(fi fs.FileInfo, role Role) string {
	uid, gid, ok := Owner(fi)
	if !ok {
		return "" // no owners on this platform (see Owner)
	}
	if !fi.IsDir() {
		return "it is a " + TypeName(fi.Mode()) + ", not a directory"
	}
	group := p.Shared && gid == p.GID
	sticky := role == Parent && fi.Mode()&fs.ModeSticky != 0
	switch {
	case uid != p.EUID && uid != 0 && !group:
		return fmt.Sprintf("it is owned by uid %d, neither you (uid %d) nor root", uid, p.EUID)
	case fi.Mode().Perm()&0o002 != 0 && !sticky:
		return "others can write to it"
	case fi.Mode().Perm()&0o020 != 0 && !group && !sticky:
		if p.Shared {
			return fmt.Sprintf("its group (gid %d) can write to it, and it is not the shared group (gid %d)", gid, p.GID)
		}
		return fmt.Sprintf("its group (gid %d) can write to it", gid)
	}
	return ""
}

// Foreign says why a file or directory was not written by the effective
// user or root (its owner, or others being able to write to it), or ""
// when it was. A shared Policy does not ask: its users verify entries
// against their source instead.
func (p Policy) Foreign(fi fs.FileInfo) string {
	uid, _, ok := Owner(fi)
	if !ok || p.Shared {
		return ""
	}
	switch {
	case uid != p.EUID && uid != 0:
		return fmt.Sprintf("is owned by uid %d, neither you (uid %d) nor root", uid, p.EUID)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("has mode %s: others could have written it", fi.Mode())
	}
	return ""
}

// TypeName names a file type for a message.
func TypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

// Check checks one path in its role; follow stats through links (a root,
// and the dirs above it, may be reached through a link), otherwise lstat.
// A missing path is no problem: there is nothing to trust yet. The
// *Unsafe is nil when the path passes; err is a failure to look.
func (p Policy) Check(path string, role Role, follow bool) (*Unsafe, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	if why := p.Why(fi, role); why != "" {
		return UnsafeOf(path, fi, why), nil
	}
	return nil, nil
}

// CheckRoot checks the absolute path root and every directory above it,
// both as it resolves and as the path reads (so a link's own dir counts:
// whoever can write there can point the link elsewhere).
func (p Policy) CheckRoot(root string) (*Unsafe, error) {
	var paths [][]string
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		paths = append(paths, Ancestors(real))
	}
	paths = append(paths, Ancestors(root))
	for i, anc := range paths {
		for j, q := range anc {
			role := Parent
			if j == len(anc)-1 {
				role = Root
			}
			// The path as given goes through links; the resolved one has none.
			if u, err := p.Check(q, role, i == len(paths)-1); u != nil || err != nil {
				return u, err
			}
		}
	}
	return nil, nil
}

// CheckInside checks root (through links) and every directory from it
// down to rel (slash- or OS-separated, relative to root), the last
// included, with lstat: the dirs on the way to a record. It stops at the
// first one that does not exist. rel must be local (filepath.IsLocal).
func (p Policy) CheckInside(root, rel string) (*Unsafe, error) {
	if u, err := p.Check(root, Root, true); u != nil || err != nil {
		return u, err
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("check %s in %s: not a local path", rel, root)
	}
	q := root
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		q = filepath.Join(q, part)
		fi, err := os.Lstat(q)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", q, err)
		}
		if why := p.Why(fi, Inside); why != "" {
			return UnsafeOf(q, fi, why), nil
		}
	}
	return nil, nil
}

// Ancestors returns /, /a, /a/b, ... up to and including the absolute
// path p.
func Ancestors(p string) []string {
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
