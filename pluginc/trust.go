package pluginc

import (
	"fmt"
	"io/fs"

	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// trust says whose writes the cache believes: the effective user's and
// root's, and, with WithSharedGroup, those of the members of one group
// (whose entries are then verified against their source before use). The
// rule itself is internal/pathtrust's, shared with the module store and
// the workdir.
type trust struct {
	euid   int
	shared bool
	gid    int // the shared group, when shared
}

// pathRole is where a path sits, which decides what it may be.
type pathRole = pathtrust.Role

const (
	roleParent = pathtrust.Parent // a directory above the cache root
	roleRoot   = pathtrust.Root   // the cache root
	roleInside = pathtrust.Inside // a directory inside the cache, on the way to an entry or a record
)

func (tr trust) policy() pathtrust.Policy {
	return pathtrust.Policy{EUID: tr.euid, Shared: tr.shared, GID: tr.gid}
}

// unsafeWhy says why a path with this info cannot be trusted in its role,
// or "" when it can (see pathtrust.Policy.Why).
func (tr trust) unsafeWhy(fi fs.FileInfo, role pathRole) string { return tr.policy().Why(fi, role) }

// foreignWhy says why a file or directory in the cache was not written by
// the effective user or root, or "" when it was (see
// pathtrust.Policy.Foreign). Shared caches do not ask: their entries are
// verified against their source instead.
func (tr trust) foreignWhy(fi fs.FileInfo) string { return tr.policy().Foreign(fi) }

// unsafePath returns the error for a path that fails its role.
func (tr trust) unsafePath(path string, fi fs.FileInfo, why string) error {
	return tr.wrap(pathtrust.UnsafeOf(path, fi, why), nil)
}

// wrap turns what pathtrust found into this package's errors.
func (tr trust) wrap(u *pathtrust.Unsafe, err error) error {
	if err != nil {
		return fmt.Errorf("pluginc: %w", err)
	}
	if u == nil {
		return nil
	}
	return &UnsafePathError{Path: u.Path, UID: u.UID, GID: u.GID, Mode: u.Mode, Why: u.Why, Shared: tr.shared}
}

// checkPath checks one path in its role; stat follows links (the root,
// and the dirs above it, may be reached through a link), lstat does not.
// A missing path is no error: there is nothing to trust yet.
func (tr trust) checkPath(path string, role pathRole, follow bool) error {
	return tr.wrap(tr.policy().Check(path, role, follow))
}

// checkRoot checks the cache root and every directory above it, both as
// it resolves and as the path reads (so a link's own dir counts).
func (tr trust) checkRoot(root string) error { return tr.wrap(tr.policy().CheckRoot(root)) }

// checkInside checks the root and every directory from it down to the
// path rel (slash- or OS-separated, relative to the root), the last
// included: the dirs on the way to an entry or a record. It stops at the
// first one that does not exist.
func (c *Cache) checkInside(rel string) error {
	return c.trust.wrap(c.trust.policy().CheckInside(c.dir, rel))
}

func geteuid() int { return pathtrust.Geteuid() }

// setGroup gives a dir the cache created the shared group and mode 2775
// (group-writable, new entries inherit the group), whatever the umask.
func setGroup(dir string, gid int) error { return pathtrust.SetGroup(dir, gid) }
