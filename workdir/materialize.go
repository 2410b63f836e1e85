package workdir

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// materialize makes root/id match the source and generated files. The
// caller holds the instance lock.
func (m *Manager) materialize(ctx context.Context, id, source string, files []genFile) (*stamp, error) {
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
	var old *stamp
	if !cold {
		old = readStamp(home)
		if st, ok, err := m.warm(ctx, home, old, source, files); err != nil || ok {
			return st, err
		}
	}

	lay := discover(ctx, m.log, source)
	ents, err := collect(ctx, lay.base, lay.dirs, m.root)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hash := setHash(lay.component, lay.dirs, ents)
	if !cold {
		m.log.InfoContext(ctx, "refreshing workdir", "id", id, "source", source)
		return m.build(ctx, home, true, old, source, lay, ents, hash, files)
	}

	m.log.InfoContext(ctx, "creating workdir", "id", id, "source", source, "files", len(ents))
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(scratch, "build-")
	if err != nil {
		return nil, err
	}
	st, err := m.build(ctx, tmp, false, nil, source, lay, ents, hash, files)
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

// warm handles the common case: the source set hashes to what the stamp
// says and the set of generated names is unchanged, so only generated
// contents may need rewriting. It reads the source but copies nothing.
func (m *Manager) warm(ctx context.Context, home string, old *stamp, source string, files []genFile) (*stamp, bool, error) {
	if old == nil || !old.Complete || old.Source != source || old.Materialized == "" {
		return nil, false, nil
	}
	gen := genPaths(old.Component, files)
	if !slices.Equal(gen, old.Generated) {
		return nil, false, nil
	}
	ents, err := collect(ctx, old.Base, old.Dirs, m.root)
	if err != nil || setHash(old.Component, old.Dirs, ents) != old.Hash {
		return nil, false, nil
	}
	src := filepath.Join(home, srcDir)
	for _, g := range files {
		dst := filepath.Join(src, filepath.FromSlash(old.Component), filepath.FromSlash(g.name))
		if sameData(dst, g.data) {
			continue
		}
		if err := writeData(dst, g.data); err != nil {
			return nil, false, fmt.Errorf("write generated file %s: %w", g.name, err)
		}
		if err := syncFile(dst); err != nil {
			return nil, false, err
		}
	}
	m.log.DebugContext(ctx, "workdir up to date", "home", home)
	return old, true, nil
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
func (m *Manager) build(ctx context.Context, home string, inPlace bool, old *stamp, source string, lay layout, ents []entry, hash string, files []genFile) (*stamp, error) {
	src := filepath.Join(home, srcDir)
	if err := os.MkdirAll(filepath.Join(home, metaDir, dataDir), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(src, filepath.FromSlash(lay.component)), 0o755); err != nil {
		return nil, err
	}
	gen := genPaths(lay.component, files)
	isGen := make(map[string]bool, len(gen))
	for _, g := range gen {
		isGen[g] = true
	}
	if err := checkGenAgainstSource(lay.component, files, ents); err != nil {
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
		Source: source, Base: lay.base, Component: lay.component, Dirs: lay.dirs, Hash: hash,
		Files: newFiles, Generated: gen,
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

	compDir := filepath.Join(src, filepath.FromSlash(lay.component))
	for _, c := range next.Moves {
		if err := moveOwned(filepath.Join(src, filepath.FromSlash(c)), compDir); err != nil {
			return nil, err
		}
	}
	next.Moves = nil

	keep := make(map[string]bool, len(newFiles)+len(gen))
	for _, f := range newFiles {
		keep[f] = true
	}
	for _, g := range gen {
		keep[g] = true
	}
	for _, rel := range union(oldFiles(old), oldGenerated(old)) {
		// A lock file once generated (by a provider cache) is the
		// instance's own from then on, like one terraform init wrote.
		if !keep[rel] && !isLockFile(rel) {
			if err := removeAndPrune(src, rel); err != nil {
				return nil, err
			}
		}
	}

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

	for _, g := range files {
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

// moveOwned carries instance-owned data from an earlier position of the
// component (the layout grew when a new local module appeared further up)
// to the current one. Each move is a rename, so a kill in between leaves
// every item whole in one place or the other, and the next build continues.
func moveOwned(from, to string) error {
	ents, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range ents {
		n := de.Name()
		if !(instanceOwned(n) || n == lockFileName || n == "terraform.tfstate.d" || n == ".terraform") {
			continue
		}
		dst := filepath.Join(to, n)
		if _, err := os.Lstat(dst); err == nil {
			continue // the new position already has its own; never overwrite state
		}
		if err := os.Rename(filepath.Join(from, n), dst); err != nil {
			return fmt.Errorf("move instance data %s: %w", n, err)
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
