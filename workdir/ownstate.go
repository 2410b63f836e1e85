package workdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// sourceState handles state the component source holds for the backend the
// component uses (the local backend: its path, terraform.tfstate by
// default, and each workspace's file under its workspace_dir), read from
// source. dir is the component in the instance's workdir and b its
// backend, generated files included. The caller holds the instance lock.
//
//   - A source whose state files record neither resources nor outputs (or
//     that has none) is not the instance's concern: nothing happens.
//   - State the source holds where its backend no longer keeps it, but
//     where plain terraform run in the source would stop to ask about
//     migrating it (see leftStatePlaces), is refused like the backend's
//     own while the instance has no state of its own, and AdoptState
//     never takes it: it is for terraform to migrate.
//   - An instance that adopted once owns its state: nothing is ever copied
//     again.
//   - Without adopt, an instance with no state of its own is refused with a
//     *SourceStateError naming the files and their resource counts; an
//     instance that has (or had) state of its own goes on.
//   - With adopt, every non-empty state file of the source is copied to the
//     same place in the workdir, atomically, then the adoption is recorded;
//     an instance state there that records resources from another lineage
//     stops it before anything is copied, and so does another
//     instance's claim on one of those files or its lineage, as the
//     instances' own records (and the root's register where they bear it
//     out) show it now (claimsNow; *AdoptedError naming every owner).
//     The claims are written under the register's flock before the
//     copies and kept if the copies or the record fail.
func (m *Manager) sourceState(ctx context.Context, id, stack, instance, home, dir, source string, b modtree.Backend, adopt bool) (err error) {
	type found struct {
		place string // as statePlaces names it
		path  string // in the source
		data  []byte
		st    stateFile
	}
	var all []found
	var files []StateFile
	for _, p := range statePlaces(source, b) {
		if filepath.IsAbs(filepath.FromSlash(p)) {
			continue // the same file for the source and every instance: nobody's to copy
		}
		sp := placeIn(source, p)
		data, st := readStateBytes(sp)
		if !st.exists || st.empty() {
			continue
		}
		all = append(all, found{place: p, path: sp, data: data, st: st})
		if st.recordsSomething() {
			files = append(files, StateFile{Path: sp, Resources: st.resourceCount(), Outputs: st.outputs})
		}
	}
	var left []StateFile
	for _, p := range leftStatePlaces(source, b) {
		sp := placeIn(source, p)
		if st := readState(sp); st.recordsSomething() {
			left = append(left, StateFile{Path: sp, Resources: st.resourceCount(), Outputs: st.outputs})
		}
	}
	if len(files) == 0 && len(left) == 0 {
		return nil
	}
	rec := readStateRecord(home)
	if len(rec.Adopted) > 0 {
		// Adopted once: the instance's state is its own from then on. The
		// register learns its name if a release without it adopted.
		if err := m.nameOwner(ctx, id, stack, instance, rec); err != nil {
			m.log.WarnContext(ctx, "the root's register of adoptions could not be given the instance's name; a refusal of the same state to another instance names it by its workdir ID",
				"id", id, "error", err)
		}
		return nil
	}
	serr := &SourceStateError{Stack: stack, Instance: instance, Source: source, Files: files, Left: left}
	if !adopt || len(left) > 0 {
		if hasOwnState(dir, b, rec) {
			return nil
		}
		return serr
	}

	// Check every place before copying anything.
	srcRoot := filepath.Join(home, srcDir)
	now := time.Now().UTC()
	var todo, adopted []found
	for _, f := range all {
		dst := placeIn(dir, f.place)
		if !within(srcRoot, dst) {
			return fmt.Errorf("adopt %s: its place in the workdir, %s, lies outside the instance's workdir %s", f.path, dst, srcRoot)
		}
		own := readState(dst)
		switch {
		case own.exists && !own.empty() && own.lineage != "" && own.lineage == f.st.lineage:
			// Copied by an adoption killed before it was recorded.
		case own.exists && !own.empty() && !f.st.recordsSomething():
			continue // nothing to adopt there; the instance's own file stays
		case own.mayHoldResources():
			serr.Blocking = &StateFile{Path: dst, Resources: own.resourceCount()}
			return serr
		case own.empty() && readState(dst+".backup").mayHoldResources():
			serr.Blocking = &StateFile{Path: dst + ".backup", Resources: readState(dst + ".backup").resourceCount()}
			return serr
		default:
			todo = append(todo, f)
		}
		sum := sha256.Sum256(f.data)
		rec.Adopted = append(rec.Adopted, adoptedState{Source: f.path, Path: f.place, SHA256: hex.EncodeToString(sum[:]),
			Lineage: f.st.lineage, Serial: f.st.serial, Resources: f.st.resourceCount(), Time: now})
		adopted = append(adopted, f)
	}

	// The root's register is checked and extended under its flock, held
	// until the instance's record is written: of two instances adopting
	// one state at once, the second to get here finds the first's claim.
	if m.adoptHook != nil {
		m.adoptHook()
	}
	fl, err := m.lockAdoptions(ctx)
	if err != nil {
		return fmt.Errorf("adopt the component's state: %w", err)
	}
	defer func() { err = errors.Join(err, unlockAdoptions(fl)) }()
	claims, stale, err := m.claimsNow()
	if err != nil {
		return fmt.Errorf("adopt the component's state: %w", err)
	}
	var mine []claim
	for _, f := range adopted {
		real := realPath(f.path)
		if owners := ownersOf(claims, id, real, f.st.lineage); len(owners) > 0 {
			return &AdoptedError{Stack: stack, Instance: instance, Lineage: f.st.lineage, Owner: owners[0], Owners: owners,
				File: StateFile{Path: f.path, Resources: f.st.resourceCount(), Outputs: f.st.outputs}}
		}
		mine = append(mine, claim{Stack: stack, Instance: instance, ID: id, Source: f.path, Real: real, Lineage: f.st.lineage, Time: now})
	}
	// Claimed first: a kill or a failure after this leaves a claim naming
	// this instance (its next adoption finishes the job, and no other
	// instance adopts meanwhile once it holds a copy), never copies
	// another instance could adopt as well. So a failure below keeps the
	// claim: giving it back could leave copies here that the instance
	// would run on while another adopts the same state. Claims of this
	// instance already there are from an adoption cut off before its
	// record: replaced. The register written is the one claimsNow found
	// true, so a stale one (a release without it adopted or removed)
	// is mended here.
	claims = append(slices.DeleteFunc(claims, func(c claim) bool { return c.ID == id }), mine...)
	if err := m.writeAdopted(adoptedRegister{Claims: claims}); err != nil {
		return fmt.Errorf("adopt the component's state: %w", err)
	}
	if stale {
		m.log.InfoContext(ctx, "the root's register of adoptions disagreed with the instances' own records (a release without it adopted or removed an instance): rewritten from them",
			"register", filepath.Join(m.root, adoptedFile))
	}
	for _, f := range todo {
		dst := placeIn(dir, f.place)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("adopt %s: %w", f.path, err)
		}
		// State holds secrets as terraform renders them: owner only.
		if err := atomicfile.WriteFile(dst, f.data, 0o600); err != nil {
			return fmt.Errorf("adopt %s: %w", f.path, err)
		}
	}
	// Recorded last: a kill before this leaves copies the next adoption
	// recognises by lineage, never a record without its copies.
	if err := writeStateRecord(home, rec); err != nil {
		return fmt.Errorf("adopt the component's state: %w", err)
	}
	for _, f := range todo {
		m.log.InfoContext(ctx, "adopted the component's state into the instance", "id", id, "from", f.path, "to", placeIn(dir, f.place), "resources", f.st.resourceCount())
	}
	return nil
}

// hasOwnState reports whether the instance has, or had, state of its own
// at the places its backend uses: a state file or a backup with content,
// or a record of one.
func hasOwnState(dir string, b modtree.Backend, rec stateRecord) bool {
	if len(rec.Seen) > 0 || len(rec.Adopted) > 0 {
		return true
	}
	for _, p := range statePlaces(dir, b) {
		abs := placeIn(dir, p)
		for _, f := range []string{abs, abs + ".backup"} {
			if s := readState(f); s.exists && !s.empty() {
				return true
			}
		}
	}
	return false
}

// leftStatePlaces returns the places (as statePlaces names them) where the
// source holds state its backend b does not use, but where plain
// terraform, run in the source, would find it and stop to ask about
// migrating it: terraform's default local places (terraform.tfstate and
// terraform.tfstate.d/NAME/terraform.tfstate), which a first init with
// another backend offers to copy into it; and the places of the local
// backend that the source's own data dir (.terraform/terraform.tfstate,
// written by plain terraform there) records, when the configuration now
// names another (init says the backend changed). Only places inside the
// source are returned: a path read from the record never leads the check
// elsewhere.
func leftStatePlaces(source string, b modtree.Backend) []string {
	use := map[string]bool{}
	for _, p := range statePlaces(source, b) {
		use[path.Clean(p)] = true
	}
	var out []string
	add := func(old modtree.Backend) {
		for _, p := range statePlaces(source, old) {
			if p = path.Clean(p); !use[p] && filepath.IsLocal(filepath.FromSlash(p)) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	add(modtree.Backend{})
	if old, ok := recordedBackend(filepath.Join(source, ".terraform")); ok && old.Type == "local" {
		add(old)
	}
	return out
}
