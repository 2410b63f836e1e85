package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// The manager believes only what the effective user or root wrote
// (invariant 12, internal/pathtrust, the rule the provider cache and the
// module store follow): the root, every dir above it (a sticky one, as
// /tmp is, may be writable by all), the root's own dirs and every home
// must be theirs and writable by neither group nor others.

// trustErr turns what pathtrust found into this package's error.
func trustErr(u *pathtrust.Unsafe, err error, home bool) error {
	if err != nil {
		return err
	}
	if u == nil {
		return nil
	}
	return &UnsafePathError{Path: u.Path, UID: u.UID, GID: u.GID, Mode: u.Mode, Why: u.Why, Home: home}
}

// checkRootTrust checks the root and every dir above it, as the path
// reads and as it resolves (a root that is a link to another user's dir
// is theirs), and the root's own dirs.
func (m *Manager) checkRootTrust() error {
	p := pathtrust.Effective()
	u, err := p.CheckRoot(m.root)
	if err := trustErr(u, err, false); err != nil {
		return err
	}
	for _, d := range []string{locksDir, tmpDir} {
		u, err := p.CheckInside(m.root, d)
		if err := trustErr(u, err, false); err != nil {
			return err
		}
	}
	return nil
}

// checkHome refuses a home (and the dirs a build keeps in it) that is
// not a directory of the effective user's or root's, writable by no one
// else: someone else made it (before the instance's first run, or by
// swapping it since), and it is never refreshed in place. A missing home
// is fine: the build makes a fresh 0700 one.
func checkHome(home string) error {
	p := pathtrust.Effective()
	for _, d := range []string{home, filepath.Join(home, metaDir), filepath.Join(home, srcDir)} {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			if d == home {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if why := p.Why(fi, pathtrust.Inside); why != "" {
			return trustErr(pathtrust.UnsafeOf(d, fi, why), nil, true)
		}
	}
	return nil
}

// narrowHome makes the home and the dirs that hold its records (its
// .tfisolate dir and the data dir) 0700, and the records in .tfisolate
// 0600, as a build makes them: a home an older release left 0755, with
// 0644 records, is private from its next Prepare on.
func narrowHome(home string) error {
	for _, d := range []string{home, filepath.Join(home, metaDir), instanceDataDir(home)} {
		if err := atomicfile.Narrow(d, atomicfile.RecordDir); err != nil {
			return err
		}
	}
	for _, f := range []string{stampPath(home), stateRecordPath(home), filepath.Join(home, metaDir, sourceFilesFile)} {
		if err := atomicfile.Narrow(f, atomicfile.Record); err != nil {
			return err
		}
	}
	return nil
}

// localSlash reports whether p, a slash path a stamp recorded, is local
// and clean: it names something inside the dir it is relative to, never
// .., never absolute.
func localSlash(p string) bool {
	return p != "" && !strings.ContainsRune(p, 0) && path.Clean(p) == p && filepath.IsLocal(filepath.FromSlash(p))
}

// stampProblem says why a stamp cannot be believed, or "" when it can:
// every path it lists for removal, renaming or copying must be local and
// clean (its sources absolute and clean). A stamp that fails is ignored,
// as an unreadable one is, and the home is materialized again.
func stampProblem(st *stamp) string {
	if !localSlash(st.Component) {
		return fmt.Sprintf("component %q is not a local path", st.Component)
	}
	for _, a := range []string{st.Source, st.Base} {
		if a != "" && (!filepath.IsAbs(a) || filepath.Clean(a) != a) {
			return fmt.Sprintf("%q is not a clean absolute path", a)
		}
	}
	for _, list := range [][]string{st.Files, st.Generated, st.Moves, st.Dirs} {
		for _, p := range list {
			if !localSlash(p) {
				return fmt.Sprintf("%q is not a local path", p)
			}
		}
	}
	for _, r := range st.Reads {
		if !localSlash(path.Join(st.Component, r)) {
			return fmt.Sprintf("read %q leaves the layout", r)
		}
	}
	for p := range st.Inputs {
		if !localSlash(p) {
			return fmt.Sprintf("input %q is not a local path", p)
		}
	}
	return ""
}

// errLink is returned for a path whose way from the home goes through a
// symlink: removals and renames never follow one out of the home.
var errLink = errors.New("a symlink on the way; not followed out of the home")

// noLinkOnWay checks that p lies inside top (lexically) and that no
// directory between top (excluded) and p (excluded) is a symlink, so an
// operation on p stays inside top. Missing dirs end the check: nothing
// beyond them exists to follow.
func noLinkOnWay(top, p string) error {
	rel, err := filepath.Rel(top, p)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s is outside %s", p, top)
	}
	d := top
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts[:len(parts)-1] {
		d = filepath.Join(d, part)
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w", d, errLink)
		}
	}
	return nil
}
