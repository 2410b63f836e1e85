package workdir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

const (
	locksDir  = ".locks"     // under root: one lock + holder file per instance, never deleted
	tmpDir    = ".tmp"       // under root: per-instance scratch for cold builds and removals
	metaDir   = ".tfisolate" // under an instance home: stamp and data dir
	srcDir    = "src"        // under an instance home: the materialized source layout
	dataDir   = "data"       // under metaDir: TF_DATA_DIR
	stampFile = "stamp.json" // under metaDir: written last by every materialization
)

// Manager creates and refreshes instance workdirs under one root directory.
// It is safe for concurrent use, and several processes may share a root.
type Manager struct {
	root      string
	realRoot  string // root with symlinks resolved: never copied from a source
	log       *slog.Logger
	lockRetry time.Duration
	hook      func(path string)
	adoptHook func() // see withAdoptHook
	budget    budget
	// sums remembers the digest of every source file this Manager has
	// read, by path and version, so an unchanged refresh of any number of
	// instances of one component reads its files once (Spec.Rehash).
	sums treesum.Memo
}

// checked is a Spec that passed every check made before the lock.
type checked struct {
	id     string
	source string // absolute component dir, as given (symlinks kept)
	files  []genFile
	rule   modtree.Files // which files are configuration: Spec.Engine's
	// sources are Spec.ModuleSources, nil when it is empty.
	sources map[string]string
	// repo is Spec.Repository, absolute and clean; "" when not given.
	repo string
}

// Spec says which instance to prepare and from what.
type Spec struct {
	Stack    string            // "plat-ue2-dev"
	Instance string            // full instance path, "elasticache/redis-cluster-1"
	Source   string            // component root module dir
	Files    map[string][]byte // generated files, relative to the component dir: backend.tf.json, NAME.tfvars.json, ...
	// AdoptState makes this instance the owner of the local state the
	// component source holds for the backend it uses (the local backend's
	// path, terraform.tfstate by default, and each workspace's file under
	// its workspace_dir; see ErrSourceState): Prepare copies those files
	// once, atomically and under the instance lock, to the same places in
	// the workdir, and records the adoption. From then on the state is
	// the instance's own: later Prepares never copy it again, set or not.
	// Adoption is refused (ErrSourceState, nothing copied) when the
	// instance already has state that records resources at one of those
	// places. A state is adopted into one instance only: each adoption
	// checks every instance's own record of its adoptions under a
	// root-wide flock (so processes adopting at once end with one owner;
	// the root's index, ROOT/.adopted.json, is never believed over the
	// records, so an adoption or removal by a release without it counts),
	// and an adoption of a state another instance adopted already, the
	// same lineage wherever the file is or the same source file, is
	// refused with an *AdoptedError (ErrAdopted, ErrSourceState) naming
	// every current owner, copying nothing; Manager.Remove of the owner
	// gives the state up. After adopting, move the state out of the
	// component dir.
	AdoptState bool
	// Engine is the engine that will run the workdir: Terraform (also
	// the empty value) or OpenTofu. It decides which files are
	// configuration when Prepare follows local module calls, reads the
	// local backend's state paths and finds terraform_remote_state
	// inputs (see Engine); another value is refused as invalid. The
	// runner sets it from the engine it detected. Changing it for an
	// instance rebuilds the workdir's layout, instance-owned data kept.
	Engine Engine
	// ModuleSources are the values of the component's module sources
	// that are expressions (`source = "../../modules/${var.name}"`, an
	// engine that evaluates variables early: OpenTofu 1.8, Terraform
	// 1.15), by module name, for calls of the component itself: the
	// value the engine will evaluate each to with the instance's
	// variables. Prepare follows a local one like a literal local source,
	// so the module it selects is in the workdir at the same relative
	// position; a change of a value rebuilds the layout. A dynamic source
	// not named here is not followed (a module inside the component is
	// copied with it all the same). The runner evaluates them from the
	// unit's variables; a host that uses workdir alone sets them itself.
	// The values are never written (the stamp keeps their digest): one
	// may carry a credential.
	ModuleSources map[string]string
	// Repository is the directory the component's local module sources
	// must stay in: a local call (the component's, or a local module's)
	// whose directory lies outside it is refused with an
	// *OutsideRepositoryError (ErrOutsideRepository) naming the call,
	// its source and the directory, and nothing is written. Paths are
	// compared as terraform joins them (symlinks kept); a symlink inside
	// the repository is followed wherever it leads. Empty means the
	// nearest directory above the component (itself included) that
	// holds a .git (a directory, or a worktree's or submodule's file);
	// without one, the top-level directory the component lies in (/srv
	// for /srv/infra/components/vpc), or the directory just below the
	// user's home directory for a component under it (~/infra). Set it
	// when modules live beside the repository on purpose (a sibling
	// checkout) or a submodule's component calls its superproject's
	// modules. It must exist and hold Source.
	Repository string
	// Rehash makes Prepare read and hash every file of the source set
	// again. Without it, a file this Manager has read before is not read
	// again while its inode, size, mode, mtime and ctime are what they
	// were then: its remembered digest stands for its content (see the
	// package doc for what a refresh trusts). Set it where a file may
	// change without moving those: a filesystem that keeps no ctime or
	// caches attributes (some network mounts), or a platform other than
	// Linux and macOS, where only the mtime is seen.
	Rehash bool
}

// Workdir is a prepared instance working directory. It holds the instance
// lock until Close.
//
// Dir can differ between two Prepares of one instance: when the component
// starts (or stops) calling a local module outside its own directory, the
// layout grows (or shrinks) and the component moves inside it, taking its
// instance-owned files along. Always run terraform in the Dir just returned.
type Workdir struct {
	ID       string // see ID
	Dir      string // where to run terraform: the component inside the materialized layout
	DataDir  string // TF_DATA_DIR, outside the files a refresh replaces
	Home     string // the instance's directory under the root
	LockFile string // the flock file; never deleted
	// LockWait is how long Prepare waited for another holder of the
	// instance lock (zero when the lock was free), not counting the time
	// spent refreshing files.
	LockWait time.Duration
	// Holder is who held the instance lock while Prepare waited for it, as
	// that holder recorded itself (the last one seen when several took
	// turns). It is nil when Prepare did not have to wait, and also when
	// the holder never recorded itself (it was killed right after taking
	// the lock, or let go before it could).
	Holder *Holder
	// Digest identifies exactly what Prepare materialized: the layout,
	// every file copied from the source (path, mode and the content
	// actually written), the lock file seeded from the source, and every
	// generated file (path and content). Two Prepares of one instance
	// return equal digests if and only if they left the same configuration
	// for terraform to read; instance-owned data (state, saved plans, the
	// data dir, a lock file terraform or the caller wrote) is not part of
	// it. It is a lowercase hex SHA-256; compare it, never parse it. Use it
	// to refuse a saved plan made from other content, or to skip work when
	// nothing changed.
	Digest string
	// SourceDigest is the part of Digest that the source decides: the
	// layout and every file copied from the source (the seeded lock file
	// included), without the generated files. Two Prepares with equal
	// SourceDigests and different Digests differ in generated files
	// only; a record can so tell "the component's files changed" from "a
	// generated file changed". A lowercase hex SHA-256, like Digest.
	SourceDigest string

	lock      *instanceLock
	rule      modtree.Files // Spec.Engine's configuration rule
	closeOnce sync.Once
	closeErr  error
}

// New returns a Manager for root, creating root if needed (0700, as
// every missing dir above it that New creates). The root,
// every dir above it and the root's own dirs must be owned by the
// effective user or root and writable by neither group nor others (a dir
// above the root may be sticky and writable by all, as /tmp is; the root
// may not); a root that is a symlink is checked where it points, and its
// own dir too. Otherwise New returns an *UnsafePathError (ErrUnsafePath)
// naming the path, its owner and its mode, and creates nothing. On
// platforms without Unix owners and modes (Windows) nothing is checked.
func New(root string, opts ...Option) (*Manager, error) {
	if root == "" {
		return nil, invalid("root", root, "is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, invalid("root", root, "%v", err)
	}
	c := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("new workdir manager: %w", invalid("option", fmt.Sprintf("#%d", i+1), "is nil"))
		}
		if err := o.apply(&c); err != nil {
			return nil, fmt.Errorf("new workdir manager: %w", err)
		}
	}
	m := &Manager{root: abs, log: c.log, lockRetry: c.lockRetry, hook: c.hook, adoptHook: c.adoptHook, budget: c.budget}
	// Checked before anything is created (never a dir in another user's
	// reach) and again after: whoever made it first, it is checked as it
	// is now.
	if err := m.checkRootTrust(); err != nil {
		return nil, fmt.Errorf("new workdir manager: %w", err)
	}
	// Created only once every option is known to be good: a refused
	// option leaves nothing behind.
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create workdir root: %w", err)
	}
	if err := m.checkRootTrust(); err != nil {
		return nil, fmt.Errorf("new workdir manager: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("create workdir root: %w", err)
	}
	m.realRoot = real
	return m, nil
}

// Root returns the absolute root directory.
func (m *Manager) Root() string { return m.root }

// Home returns the directory an instance's workdir lives in, without
// touching the filesystem.
func (m *Manager) Home(stack, instance string) (string, error) {
	id, err := ID(stack, instance)
	if err != nil {
		return "", err
	}
	return filepath.Join(m.root, id), nil
}

// Check validates s exactly as Prepare does before it takes the instance
// lock, and returns the instance's workdir ID. It writes nothing, takes no
// lock and does not look at the instance's workdir, so a caller can check
// every instance it means to run before starting any. The checks: stack
// and instance names (see ID), that the source exists and is a
// directory, that the source and the manager's root do not lie inside one
// another (symlinks resolved on both sides), and that every generated
// file name is a clean relative path that does not touch instance-owned
// data (state-like names, the data dir, and the local backend's path and
// workspace_dir as the source and the generated files configure them). A
// bad Spec gives an *InputError (wrapping ErrInvalid) naming the field
// and value.
//
// Generated names that only conflict with the source's content (a name
// that is a directory in the source) are found by Prepare, still before
// it writes anything.
func (m *Manager) Check(s Spec) (id string, err error) {
	c, err := m.check(s)
	if err != nil {
		if c != nil {
			return c.id, fmt.Errorf("check workdir %s: %w", c.id, err)
		}
		return "", fmt.Errorf("check workdir: %w", err)
	}
	return c.id, nil
}

// check returns the validated spec; on error it still returns the ID when
// the names were valid, so messages can name the instance.
func (m *Manager) check(s Spec) (*checked, error) {
	id, err := ID(s.Stack, s.Instance)
	if err != nil {
		return nil, err
	}
	c := &checked{id: id}
	var ok bool
	if c.rule, ok = s.Engine.files(); !ok {
		return c, invalid("engine", string(s.Engine), "is neither %q nor %q", Terraform, OpenTofu)
	}
	if c.source, err = checkSource(s.Source); err != nil {
		return c, err
	}
	if err := m.checkRoot(s.Source, c.source); err != nil {
		return c, err
	}
	if c.files, err = checkFiles(s.Files); err != nil {
		return c, err
	}
	for n, v := range s.ModuleSources {
		if !hclsyntax.ValidIdentifier(n) {
			return c, invalid("module source", n, "is not a module name")
		}
		if v == "" {
			return c, invalid("module source", n, "has an empty value")
		}
	}
	if len(s.ModuleSources) > 0 {
		c.sources = maps.Clone(s.ModuleSources)
	}
	if s.Repository != "" {
		if c.repo, err = checkRepository(s.Repository, c.source); err != nil {
			return c, err
		}
	}
	// A generated file at the local backend's state path would replace the
	// instance's state on every Prepare.
	if len(c.files) > 0 {
		overlay := map[string][]byte{}
		for _, g := range c.files {
			if !strings.Contains(g.name, "/") {
				overlay[g.name] = g.data
			}
		}
		b, _ := modtree.ReadBackend(c.source, overlay, c.rule) // unreadable: terraform reports it
		owned := statePathsOf(".", b)
		for _, g := range c.files {
			if owned.has(g.name) {
				return c, invalid("file", g.name, "is where the local backend keeps the instance's state")
			}
		}
	}
	return c, nil
}

// checkRoot refuses a source that contains the root (materializing would
// write into the source tree, invariant 1, and every build would copy the
// previous ones) or lies inside it (a refresh could rewrite the source
// while reading it). Paths are compared both as given and with symlinks
// resolved, so neither can hide behind a link.
func (m *Manager) checkRoot(given, source string) error {
	realSrc, err := filepath.EvalSymlinks(source)
	if err != nil {
		return invalid("source", given, "%v", err)
	}
	realRoot, err := filepath.EvalSymlinks(m.root)
	if err != nil {
		realRoot = m.root // the root was removed behind our back; New recreates it
	}
	for _, p := range [][2]string{{source, m.root}, {realSrc, realRoot}} {
		if within(p[0], p[1]) {
			return invalid("source", given, "contains the workdir root %s", m.root)
		}
		if within(p[1], p[0]) {
			return invalid("source", given, "lies inside the workdir root %s", m.root)
		}
	}
	return nil
}

// Prepare validates s (see Check), takes the instance's exclusive lock
// (waiting under ctx), and makes the instance's workdir match s.Source and
// s.Files. The returned Workdir holds the lock until Close. When s is
// invalid Prepare returns an error wrapping ErrInvalid and writes nothing;
// when the lock is not acquired before ctx ends it returns a *LockedError.
//
// When the component source holds local state that records resources or
// outputs for the backend the component uses, and the instance has no
// state of its own, Prepare returns a *SourceStateError (wrapping
// ErrSourceState) naming the files and how many resources (and outputs)
// each records, unless
// s.AdoptState asks to adopt that state into this instance (see Spec). A
// state file the configuration only reads (a local
// terraform_remote_state path inside the component) is an input: it is
// copied like configuration.
//
// Prepare checks the root again (see New) and, under the lock, the
// instance's home: a home (or its .tfisolate or src dir) that is not a
// directory owned by the effective user or root, or that its group or
// others can write to, is refused with an *UnsafePathError
// (ErrUnsafePath) naming it, its owner and its mode, and nothing is
// written in it. A home Prepare creates is a fresh 0700 dir.
//
// A source set larger than the materialization budget (WithBudget) fails
// with an error wrapping ErrBudget naming the file where the budget ran
// out; the instance's workdir is left as it was.
func (m *Manager) Prepare(ctx context.Context, s Spec) (*Workdir, error) {
	c, err := m.check(s)
	if err != nil {
		if c == nil {
			return nil, fmt.Errorf("prepare workdir: %w", err)
		}
		return nil, fmt.Errorf("prepare workdir %s: %w", c.id, err)
	}
	id := c.id
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	// Every Prepare: the root may have been opened to others since New.
	if err := m.checkRootTrust(); err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	lk, err := m.lock(ctx, s.Stack, s.Instance, id)
	if err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	// Under the lock, right before it is used: a home someone else made
	// or can write is never refreshed in place.
	if err := checkHome(filepath.Join(m.root, id)); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare workdir %s: %w", id, err), lk.release())
	}
	st, err := m.materialize(ctx, id, c, s.Rehash)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prepare workdir %s: %w", id, err), lk.release())
	}
	home := filepath.Join(m.root, id)
	if err := narrowHome(home); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare workdir %s: %w", id, err), lk.release())
	}
	dir := filepath.Join(home, srcDir, filepath.FromSlash(st.Component))
	b, _ := modtree.ReadBackend(dir, nil, c.rule) // the workdir's copy, generated files included; unreadable: terraform reports it
	if err := m.sourceState(ctx, id, s.Stack, s.Instance, home, dir, c.source, b, s.AdoptState); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare workdir %s: %w", id, err), lk.release())
	}
	return &Workdir{
		ID:           id,
		Dir:          dir,
		DataDir:      instanceDataDir(home),
		Home:         home,
		LockFile:     lk.path,
		LockWait:     lk.waited,
		Holder:       lk.waitedFor,
		Digest:       digest(st, c.files),
		SourceDigest: st.Materialized,
		lock:         lk,
		rule:         c.rule,
	}, nil
}

// Env returns the environment variables terraform needs to run in w: only
// TF_DATA_DIR, pointing at w.DataDir, so that .terraform (providers,
// modules, backend config, workspace choice) stays with the instance and
// survives refreshes. Callers add it on top of their own environment and
// run terraform with w.Dir as its working directory.
func (w *Workdir) Env() map[string]string {
	return map[string]string{"TF_DATA_DIR": w.DataDir}
}

// Close releases the instance lock. It is safe to call more than once.
func (w *Workdir) Close() error {
	w.closeOnce.Do(func() {
		if w.lock != nil {
			w.closeErr = w.lock.release()
		}
	})
	return w.closeErr
}

func checkSource(source string) (string, error) {
	if source == "" {
		return "", invalid("source", source, "is empty")
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return "", invalid("source", source, "%v", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", invalid("source", source, "does not exist")
	case err != nil:
		return "", invalid("source", source, "%v", err)
	case !fi.IsDir():
		return "", invalid("source", source, "is not a directory")
	}
	return abs, nil
}
