package workdir

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// input is everything a build works from.
type input struct {
	source  string            // absolute component dir
	files   []genFile         // generated files
	rule    modtree.Files     // which files are configuration (Spec.Engine)
	sources map[string]string // Spec.ModuleSources
	repo    repository        // where local module sources must stay
	backend modtree.Backend   // the component's backend, generated files included
	dataDir string            // the instance's TF_DATA_DIR, where the engine records the backend it configured
	sums    *treesum.Memo     // source digests to reuse; nil when the caller asked for a full re-hash
}

// stateBackends are the backends whose local state is the instance's (see
// stateBackends).
func (in input) stateBackends() []modtree.Backend { return stateBackends(in.backend, in.dataDir) }

// materialize makes root/id match the source and generated files. The
// caller holds the instance lock.
func (m *Manager) materialize(ctx context.Context, id string, c *checked, rehash bool) (*stamp, error) {
	source, files, rule := c.source, c.files, c.rule
	home := filepath.Join(m.root, id)
	scratch := filepath.Join(m.root, tmpDir, id)
	// Leftovers of a cold build or removal killed before its rename; nobody
	// else uses them while we hold the lock.
	if err := os.RemoveAll(scratch); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", scratch, err)
	}
	_, err := os.Stat(home)
	cold := errors.Is(err, os.ErrNotExist)
	if err != nil && !cold {
		return nil, err
	}
	in := input{source: source, files: files, rule: rule, sources: c.sources, repo: findRepository(source, c.repo), backend: m.readBackend(ctx, source, files, rule), dataDir: instanceDataDir(home), sums: &m.sums}
	if rehash {
		in.sums = nil
	}
	var old *stamp
	if !cold {
		if err := stampNewer(home); err != nil {
			return nil, err
		}
		old = readStamp(home)
		st, set, ok, err := m.warm(ctx, home, old, in)
		if err != nil {
			return nil, err
		}
		if ok {
			m.noteSkipped(ctx, id, set)
			if st.Version != stampVersion {
				// An older stamp is rewritten in this version's form
				// (a version 1 stamp kept module sources in clear).
				if err := writeStamp(home, st); err != nil {
					return nil, err
				}
			}
			return st, nil
		}
	}

	lay, err := discover(ctx, m.log, source, rule, in.sources, in.repo)
	if err != nil {
		return nil, err
	}
	set, err := collect(ctx, lay.base, lay.dirs, m.realRoot, statePathsOf(lay.component, in.stateBackends()...), inputsOf(lay.reads, lay.component, in.stateBackends()...), m.budget, in.sums)
	if err != nil {
		return nil, err
	}
	m.noteSkipped(ctx, id, set)
	if !cold {
		m.log.InfoContext(ctx, "refreshing workdir", "id", id, "source", source)
		return m.build(ctx, home, true, old, in, lay, set.ents)
	}

	m.log.InfoContext(ctx, "creating workdir", "id", id, "source", source, "files", len(set.ents))
	if err := atomicfile.MkdirPrivate(scratch); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(scratch, "build-")
	if err != nil {
		return nil, err
	}
	st, err := m.build(ctx, tmp, false, nil, in, lay, set.ents)
	if err == nil {
		err = os.Rename(tmp, home)
	}
	if err == nil {
		err = atomicfile.SyncDir(m.root)
	}
	if rerr := os.RemoveAll(scratch); err == nil && rerr != nil {
		m.log.DebugContext(ctx, "cannot remove scratch dir", "dir", scratch, "err", rerr)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// readBackend reads the component's backend block, the generated files
// included (a generated backend.tf.json is the usual place for it). A
// configuration it cannot read is terraform's to report; the default
// local state places still apply.
func (m *Manager) readBackend(ctx context.Context, source string, files []genFile, rule modtree.Files) modtree.Backend {
	overlay := map[string][]byte{}
	for _, g := range files {
		if !strings.Contains(g.name, "/") {
			overlay[g.name] = g.data
		}
	}
	b, err := modtree.ReadBackend(source, overlay, rule)
	if err != nil {
		m.log.DebugContext(ctx, "cannot read the backend configuration; assuming local defaults", "source", source, "err", err)
	}
	return b
}

// noteSkipped says, once per Prepare, what the source holds that is never
// copied and that a user may not expect to be left out.
func (m *Manager) noteSkipped(ctx context.Context, id string, set *scan) {
	if set == nil {
		return
	}
	if len(set.state) > 0 {
		m.log.InfoContext(ctx, "source holds local state; not copied (state is instance-owned in the workdir)", "id", id, "files", set.state)
	}
	if len(set.irregular) > 0 {
		m.log.InfoContext(ctx, "source holds files that are not regular files; skipped", "id", id, "files", set.irregular)
	}
	if len(set.unfollowed) > 0 {
		m.log.InfoContext(ctx, "symlinked directories not followed (a loop, or the workdir root)", "id", id, "dirs", set.unfollowed)
	}
}

// warm handles the common case: the source set hashes to what the stamp
// says, no missing module directory has appeared, the layout stays in
// the repository, and the set of generated names is unchanged, so only
// generated contents may need rewriting. It reads the source but copies
// nothing. A layout that leaves the repository (a stamp written before
// the check, or a narrower Spec.Repository) goes to discover, which
// refuses it by name.
func (m *Manager) warm(ctx context.Context, home string, old *stamp, in input) (*stamp, *scan, bool, error) {
	if old == nil || !old.Complete || old.Source != in.source || old.Engine != stampEngine(in.rule) || old.Materialized == "" || !old.ReadsKnown || !stillMissing(old.Missing) ||
		old.ModuleSourcesDigest != sourcesDigest(in.sources) || !within(in.repo.dir, old.Base) {
		return nil, nil, false, nil
	}
	gen := genPaths(old.Component, in.files)
	if !slices.Equal(gen, old.Generated) {
		return nil, nil, false, nil
	}
	set, err := collect(ctx, old.Base, old.Dirs, m.realRoot, statePathsOf(old.Component, in.stateBackends()...), inputsOf(old.Reads, old.Component, in.stateBackends()...), m.budget, in.sums)
	if cerr := ctx.Err(); cerr != nil {
		return nil, nil, false, cerr
	}
	if err != nil || setHash(old.Component, old.Dirs, set.ents) != old.Hash {
		return nil, nil, false, nil
	}
	src := filepath.Join(home, srcDir)
	for _, g := range in.files {
		dst := filepath.Join(src, filepath.FromSlash(old.Component), filepath.FromSlash(g.name))
		if sameData(dst, g.data) {
			continue
		}
		if err := writeData(dst, g.data); err != nil {
			return nil, nil, false, fmt.Errorf("write generated file %s: %w", g.name, err)
		}
		if err := syncFile(dst); err != nil {
			return nil, nil, false, err
		}
	}
	if err := backfillSourceFiles(home, old, set.ents); err != nil {
		m.log.DebugContext(ctx, "cannot record the source files", "home", home, "err", err)
	}
	m.log.DebugContext(ctx, "workdir up to date", "home", home)
	return old, set, true, nil
}

func genPaths(component string, files []genFile) []string {
	out := make([]string, 0, len(files))
	for _, g := range files {
		out = append(out, path.Join(component, g.name))
	}
	sort.Strings(out)
	return out
}

// build brings home up to date with the source set. In place, it first
// writes an incomplete stamp listing every file it may touch, so a build
// killed at any point is finished by the next one.
func (m *Manager) build(ctx context.Context, home string, inPlace bool, old *stamp, in input, lay layout, ents []entry) (*stamp, error) {
	src := filepath.Join(home, srcDir)
	if err := atomicfile.MkdirPrivate(instanceDataDir(home)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(src, filepath.FromSlash(lay.component)), 0o755); err != nil {
		return nil, err
	}
	gen := genPaths(lay.component, in.files)
	isGen := make(map[string]bool, len(gen))
	for _, g := range gen {
		isGen[g] = true
	}
	if err := checkGenAgainstSource(lay.component, in.files, ents); err != nil {
		return nil, err
	}
	var newFiles []string
	var seed *entry
	for i, e := range ents {
		switch {
		case e.rel == path.Join(lay.component, lockFileName):
			seed = &ents[i]
		case isLockFile(e.rel), isGen[e.rel]:
		default:
			newFiles = append(newFiles, e.rel)
		}
	}

	next := &stamp{
		Source: in.source, Engine: stampEngine(in.rule), Base: lay.base, Component: lay.component, Dirs: lay.dirs, Missing: lay.missing, ModuleSourcesDigest: sourcesDigest(in.sources),
		Files: newFiles, Generated: gen, Reads: lay.reads, ReadsKnown: true,
	}
	if old != nil {
		next.SeedLock = old.SeedLock
		for _, c := range append(old.Moves, old.Component) {
			if c != lay.component && !slices.Contains(next.Moves, c) {
				next.Moves = append(next.Moves, c)
			}
		}
	}
	if inPlace {
		pending := *next
		pending.Files = union(newFiles, oldFiles(old))
		pending.Generated = union(gen, oldGenerated(old))
		if err := writeStamp(home, &pending); err != nil {
			return nil, err
		}
		if err := sweepTemps(src); err != nil {
			return nil, fmt.Errorf("sweep temp files: %w", err)
		}
	}

	// Instance-owned data follows the component to its new position before
	// anything of the new build lands there. Everything a build put in
	// place is the builds' own (and deleted or rewritten below); the rest
	// is the instance's, except lock files, which are the instance's once
	// written.
	ours := map[string]bool{}
	for _, f := range slices.Concat(newFiles, gen, oldFiles(old), oldGenerated(old)) {
		if !isLockFile(f) {
			ours[f] = true
		}
	}
	compDir := filepath.Join(src, filepath.FromSlash(lay.component))
	for _, c := range next.Moves {
		if err := moveOwned(src, c, lay.component, ours); err != nil {
			return nil, err
		}
		for _, b := range in.stateBackends() {
			if err := moveBackendPaths(home, c, lay.component, b); err != nil {
				return nil, err
			}
		}
	}
	next.Moves = nil

	// The instance's lock file follows the source's: when the source drops
	// its lock file, the pin it seeded goes too. A lock file the source
	// never seeded (terraform init or the caller wrote it) stays.
	if seed == nil && old != nil && old.SeedLock != "" {
		if err := noLinkOnWay(src, filepath.Join(compDir, lockFileName)); err != nil {
			return nil, fmt.Errorf("drop the lock file the source no longer has: %w", err)
		}
		if err := os.Remove(filepath.Join(compDir, lockFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("drop the lock file the source no longer has: %w", err)
		}
	}

	owned := statePathsOf(lay.component, in.stateBackends()...)
	keep := make(map[string]bool, len(newFiles)+len(gen))
	for _, f := range newFiles {
		keep[f] = true
	}
	for _, g := range gen {
		keep[g] = true
	}
	for _, rel := range union(oldFiles(old), oldGenerated(old)) {
		// A lock file once generated (by a provider cache) is the
		// instance's own from then on, like one terraform init wrote; and
		// state is never deleted, even where an older build once copied
		// it from the source.
		if keep[rel] || isLockFile(rel) || stateLike(path.Base(rel)) || owned.has(rel) {
			continue
		}
		if err := removeAndPrune(src, rel); err != nil {
			return nil, err
		}
	}

	inputs := inputsOf(lay.reads, lay.component, in.stateBackends()...)
	buf := make([]byte, 32<<10)
	var written []entry // what this build leaves materialized from the source
	for i := range ents {
		e := &ents[i]
		if !keep[e.rel] || isGen[e.rel] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err // the stamp stays incomplete; the next Prepare finishes
		}
		dst := filepath.Join(src, filepath.FromSlash(e.rel))
		if !inPlace || !sameFile(dst, *e, buf) {
			sum, size, err := copyFromSource(ctx, dst, *e, buf)
			if err != nil {
				return nil, fmt.Errorf("copy %s: %w", e.abs, err)
			}
			// The stamp describes the copy: if the source changed since it
			// was hashed, the next Prepare sees a difference and redoes it.
			e.sum, e.size = sum, size
			if m.hook != nil {
				m.hook(dst)
			}
		}
		written = append(written, *e)
		if inputs[e.rel] {
			if next.Inputs == nil {
				next.Inputs = map[string]string{}
			}
			next.Inputs[e.rel] = hex.EncodeToString(e.sum[:])
		}
	}

	if seed != nil {
		dst := filepath.Join(compDir, lockFileName)
		if _, err := os.Stat(dst); err != nil || old == nil || old.SeedLock != hex.EncodeToString(seed.sum[:]) {
			sum, size, err := copyFromSource(ctx, dst, *seed, buf)
			if err != nil {
				return nil, fmt.Errorf("seed lock file: %w", err)
			}
			seed.sum, seed.size = sum, size
		}
		next.SeedLock = hex.EncodeToString(seed.sum[:])
		written = append(written, *seed)
	} else {
		next.SeedLock = ""
	}
	sort.Slice(written, func(i, j int) bool { return written[i].rel < written[j].rel })
	next.Materialized = setHash(lay.component, lay.dirs, written)
	next.Hash = setHash(lay.component, lay.dirs, ents)
	if err := writeSourceFiles(home, lay.component, next.Materialized, written); err != nil {
		return nil, err
	}

	for _, g := range in.files {
		dst := filepath.Join(compDir, filepath.FromSlash(g.name))
		if sameData(dst, g.data) {
			continue
		}
		if err := writeData(dst, g.data); err != nil {
			return nil, fmt.Errorf("write generated file %s: %w", g.name, err)
		}
	}

	// Everything above must be on disk before the stamp says it is.
	if err := atomicfile.SyncFS(home); err != nil {
		return nil, err
	}
	next.Complete = true
	if err := writeStamp(home, next); err != nil {
		return nil, err
	}
	return next, nil
}

func oldFiles(old *stamp) []string {
	if old == nil {
		return nil
	}
	return old.Files
}

func oldGenerated(old *stamp) []string {
	if old == nil {
		return nil
	}
	return old.Generated
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	sort.Strings(out)
	return slices.Compact(out)
}

// moveOwned carries the instance's data from an earlier position of the
// component (from, a slash path under src) to its current one (to): every
// file and directory under from that no build put there (ours), wherever
// it is (local state at a backend's custom path, a workspace_dir, plans,
// the lock file, a .terraform dir, whatever a run wrote). A directory
// holding nothing of ours moves whole. Each move is a rename, so a kill in
// between leaves every item whole in one place or the other, and the next
// build continues. An item that would replace something at the new
// position stops the build with an error wrapping ErrLeftBehind naming
// both: state is never overwritten, nor silently left behind.
func moveOwned(src, from, to string, ours map[string]bool) error {
	oursDirs := map[string]bool{}
	for p := range ours {
		for d := path.Dir(p); d != "." && !oursDirs[d]; d = path.Dir(d) {
			oursDirs[d] = true
		}
	}
	// When the layout grows, the new position lies under the old one; it
	// is the destination, not data to move.
	destInside := from != to && withinSlash(from, to)
	abs := func(rel string) string { return filepath.Join(src, filepath.FromSlash(rel)) }
	// Never through a link out of the home: not from, not to.
	if err := noLinkOnWay(src, filepath.Join(abs(from), "x")); err != nil {
		return fmt.Errorf("%w: instance data at %s: %w", ErrLeftBehind, abs(from), err)
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(abs(dir))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("move instance data: %w", err)
		}
		for _, de := range ents {
			r := path.Join(dir, de.Name())
			if strings.HasPrefix(de.Name(), tmpPrefix) || ours[r] || destInside && withinSlash(to, r) {
				continue
			}
			dst := path.Join(to, relSlash(from, r))
			_, derr := os.Lstat(abs(dst))
			if de.IsDir() && (oursDirs[r] || destInside && withinSlash(r, to) || derr == nil) {
				// Holds files of ours, or the destination, or meets a
				// directory already there: go through it item by item.
				if err := walk(r); err != nil {
					return err
				}
				if !(destInside && withinSlash(r, to)) {
					_ = os.Remove(abs(r)) // only if emptied; what stays is ours and is pruned with it
				}
				continue
			}
			if derr == nil {
				return fmt.Errorf("%w: %s would replace %s at the component's new position; move or remove one of them", ErrLeftBehind, abs(r), abs(dst))
			}
			if err := noLinkOnWay(src, abs(dst)); err != nil {
				return fmt.Errorf("%w: %s cannot move to %s: %w", ErrLeftBehind, abs(r), abs(dst), err)
			}
			if err := os.MkdirAll(filepath.Dir(abs(dst)), 0o755); err != nil {
				return fmt.Errorf("move instance data: %w", err)
			}
			if err := os.Rename(abs(r), abs(dst)); err != nil {
				return fmt.Errorf("move instance data %s: %w", abs(r), err)
			}
		}
		return nil
	}
	return walk(from)
}

// moveBackendPaths moves local state the backend keeps outside the
// component's directory ("../state/x.tfstate"): such a relative path
// points elsewhere once the component has moved. State that exists at the
// old place and cannot be moved inside the instance home stops the build
// with an error wrapping ErrLeftBehind naming it.
func moveBackendPaths(home, from, to string, b modtree.Backend) error {
	if !b.Local() {
		return nil
	}
	src := filepath.Join(home, srcDir)
	meta := filepath.Join(home, metaDir)
	for _, p := range []string{b.StatePath(), b.StatePath() + ".backup", b.StateWorkspaceDir()} {
		if filepath.IsAbs(p) {
			continue
		}
		sp := path.Clean(filepath.ToSlash(p))
		if sp != ".." && !strings.HasPrefix(sp, "../") {
			continue // under the component: moveOwned carried it
		}
		oldAbs := filepath.Join(src, filepath.FromSlash(from), filepath.FromSlash(sp))
		newAbs := filepath.Join(src, filepath.FromSlash(to), filepath.FromSlash(sp))
		if oldAbs == newAbs {
			continue
		}
		if _, err := os.Lstat(oldAbs); err != nil {
			continue
		}
		if _, err := os.Lstat(newAbs); err == nil || !within(home, oldAbs) || !within(home, newAbs) || within(meta, newAbs) ||
			noLinkOnWay(home, oldAbs) != nil || noLinkOnWay(home, newAbs) != nil {
			return fmt.Errorf("%w: backend \"local\" state %s (%q seen from the component's old position) cannot move to %s; move it by hand", ErrLeftBehind, oldAbs, p, newAbs)
		}
		if err := os.MkdirAll(filepath.Dir(newAbs), 0o755); err != nil {
			return err
		}
		if err := os.Rename(oldAbs, newAbs); err != nil {
			return fmt.Errorf("move instance data %s: %w", oldAbs, err)
		}
		for d := filepath.Dir(oldAbs); d != home && d != src && within(home, d); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty
			}
		}
	}
	return nil
}

func syncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// checkGenAgainstSource refuses, before anything is written, a generated
// file that would have to replace a source directory or live under a
// source file.
func checkGenAgainstSource(component string, files []genFile, ents []entry) error {
	for _, g := range files {
		p := path.Join(component, g.name)
		for _, e := range ents {
			if strings.HasPrefix(e.rel, p+"/") {
				return invalid("file", g.name, "is a directory in the source")
			}
			if strings.HasPrefix(p, e.rel+"/") {
				return invalid("file", g.name, "lies under source file %q", e.rel)
			}
		}
	}
	return nil
}
