package workdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// repository is the directory a component's local module sources must
// stay in, and how it was found (for messages).
type repository struct {
	dir string // absolute, clean
	why string // "the nearest directory above the component holding .git", ...
}

// findRepository returns the repository of the component at the
// absolute path component (symlinks kept, as terraform joins module
// paths): given, when the caller named it (Spec.Repository, already
// checked to hold the component); else the nearest directory, the
// component's own included, that holds a .git (a directory, or the file
// of a worktree or submodule); else a bound, since an unpacked archive or
// a container image often carries no .git: the top-level directory the
// component lies in (/srv for /srv/infra/components/vpc), or, for a
// component under the user's home directory, the directory just below
// it (~/infra), never the home directory or the filesystem root
// themselves, where a climb reaches everything the user has.
func findRepository(component, given string) repository {
	if given != "" {
		return repository{dir: given, why: "Spec.Repository"}
	}
	for d := component; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return repository{dir: d, why: "the nearest directory above the component holding .git"}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		home = ""
	} else {
		home = filepath.Clean(home)
	}
	bound := component
	for d := component; ; {
		parent := filepath.Dir(d)
		if parent == d || (home != "" && within(d, home)) {
			break // d is the filesystem root, the home directory or above it
		}
		bound = d
		d = parent
	}
	why := "no directory above the component holds .git: the top-level directory it lies in"
	if home != "" && within(home, component) && home != component {
		why = "no directory above the component holds .git: the directory below the home directory it lies in"
	}
	return repository{dir: bound, why: why}
}

// checkRepository checks Spec.Repository: an existing directory that
// holds the component at source (both absolute, symlinks kept). It
// returns the directory, absolute and clean.
func checkRepository(given, source string) (string, error) {
	abs, err := filepath.Abs(given)
	if err != nil {
		return "", invalid("repository", given, "%v", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", invalid("repository", given, "%v", err)
	case !fi.IsDir():
		return "", invalid("repository", given, "is not a directory")
	case !within(abs, source):
		return "", invalid("repository", given, "does not hold the source %s", source)
	}
	return abs, nil
}

// outside returns an *OutsideRepositoryError for the first local module
// call of calls (sorted by key) whose directory lies outside r, compared
// as terraform joins them (lexically, symlinks kept); nil when every
// local call stays inside. A call to a directory that does not exist
// counts too: it names a place outside the repository all the same.
func (r repository) outside(calls []modtree.Call) error {
	for _, c := range calls {
		if c.Local && !within(r.dir, c.Dir) {
			return &OutsideRepositoryError{Call: c.Key, Source: c.Source, Caller: c.Parent, Dir: c.Dir, Repository: r.dir, Why: r.why}
		}
	}
	return nil
}

// OutsideRepositoryError names a local module call whose directory lies
// outside the component's repository (see Spec.Repository). It wraps
// ErrOutsideRepository.
type OutsideRepositoryError struct {
	Call       string // the call's path from the component: "doc", "net.subnets"
	Source     string // its source as written, or the value Spec.ModuleSources gave it
	Caller     string // the directory of the module that makes the call
	Dir        string // the directory the source names
	Repository string // the repository it leaves
	Why        string // how the repository was found
}

// Error names the call, its source, the directory it reaches and the
// repository, and what to do.
func (e *OutsideRepositoryError) Error() string {
	return fmt.Sprintf("%v: module %q (source %q in %s) is %s, outside the repository %s (%s); nothing was copied: "+
		"move the module into the repository, or set Spec.Repository to a directory that holds both",
		ErrOutsideRepository, e.Call, e.Source, e.Caller, e.Dir, e.Repository, e.Why)
}

// Unwrap makes errors.Is(err, ErrOutsideRepository) true.
func (e *OutsideRepositoryError) Unwrap() error { return ErrOutsideRepository }
