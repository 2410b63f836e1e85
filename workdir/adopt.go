package workdir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// A state adopted into one instance must never be adopted into a second
// one (invariant 13): two instances would each manage the same
// infrastructure. Each instance's own record (ROOT/ID/.tfisolate/
// state.json) says what it adopted, and is the truth: every release
// writes it. The root's register, ROOT/.adopted.json, indexes those
// records and adds what they cannot say: each owner's stack and
// instance, and a claim made before the instance's copies and record,
// so an adoption cut off half-way still holds its state. A release
// before the register never read or wrote it, so it is never believed
// over the records (claimsNow): every adoption reads them all.
// It is read, checked and extended under one root-wide flock,
// ROOT/.locks/.adopted.lock, held from the check to the record, so two
// processes adopting into two instances at once end with one owner.
// Adoptions are rare (once per legacy state), so one lock for the root
// and one read of its homes' records cost nothing a run would notice,
// and a Prepare that adopts nothing does neither.

const (
	adoptedFile = ".adopted.json" // under root: who adopted which state
	adoptedLock = ".adopted.lock" // under root/locksDir: the register's flock, never deleted
)

// adoptedVersion is the register's format (internal/format); a newer
// register is refused by name and never replaced.
const adoptedVersion = 2

// adoptedRegister is the content of adoptedFile.
type adoptedRegister struct {
	Version int     `json:"version,omitempty"` // adoptedVersion when written; 1 (none named) in earlier releases'
	Claims  []claim `json:"claims"`
}

// claim says that one instance adopted one state file of a component
// source. A state is the same state as a claim's when it has the claim's
// lineage (a copy of the file elsewhere included) or is the file the
// claim was made for (by its path, symlinks resolved).
type claim struct {
	Stack    string    `json:"stack,omitempty"` // "" only for a claim found in an older root's instance record
	Instance string    `json:"instance,omitempty"`
	ID       string    `json:"id"`
	Source   string    `json:"source"`         // the state file in the component source, absolute
	Real     string    `json:"real,omitempty"` // Source with symlinks resolved, when it could be
	Lineage  string    `json:"lineage,omitempty"`
	Time     time.Time `json:"time"`
}

// owner is the Owner a claim names.
func (c claim) owner() Owner {
	return Owner{Stack: c.Stack, Instance: c.Instance, ID: c.ID, Source: c.Source, Lineage: c.Lineage, Time: c.Time}
}

// matches reports whether the state file at real (symlinks resolved)
// with lineage is the state c claims.
func (c claim) matches(real, lineage string) bool {
	if lineage != "" && c.Lineage == lineage {
		return true
	}
	at := c.Real
	if at == "" {
		at = c.Source
	}
	return at == real
}

// ownersOf returns the owner of every claim but instance id's on the
// state file at real (symlinks resolved) with lineage, one per instance,
// oldest adoption first. More than one means a release without the
// register adopted the state again.
func ownersOf(claims []claim, id, real, lineage string) []Owner {
	var out []Owner
	for _, c := range claims {
		if c.ID != id && c.matches(real, lineage) && !slices.ContainsFunc(out, func(o Owner) bool { return o.ID == c.ID }) {
			out = append(out, c.owner())
		}
	}
	slices.SortStableFunc(out, func(a, b Owner) int { return a.Time.Compare(b.Time) })
	return out
}

// realPath is p with symlinks resolved, or p when it cannot be.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// lockAdoptions takes the root's adoption flock, waiting under ctx
// (invariant 11). The caller releases it with unlockAdoptions.
func (m *Manager) lockAdoptions(ctx context.Context) (*flock.Flock, error) {
	dir := filepath.Join(m.root, locksDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create lock dir: %w", err)
	}
	fl := flock.New(filepath.Join(dir, adoptedLock))
	ok, err := fl.TryLockContext(ctx, m.lockRetry)
	if err == nil && !ok {
		err = ctx.Err()
	}
	if err != nil {
		_ = fl.Close()
		return nil, fmt.Errorf("lock the root's adoptions %s: %w", fl.Path(), err)
	}
	return fl, nil
}

func unlockAdoptions(fl *flock.Flock) error {
	if err := errors.Join(fl.Unlock(), fl.Close()); err != nil {
		return fmt.Errorf("unlock the root's adoptions %s: %w", fl.Path(), err)
	}
	return nil
}

// readAdopted reads the root's register. exists is false when there is
// none yet. A register the effective user (or root) did not write, or
// that is not a regular file, is refused with an *UnsafePathError
// (invariant 12); one that cannot be parsed is an error naming it: it is
// only ever replaced whole, so something else changed it, and taking it
// for empty would let a state be adopted twice.
func (m *Manager) readAdopted() (reg adoptedRegister, exists bool, err error) {
	p := filepath.Join(m.root, adoptedFile)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return reg, false, nil
	}
	if err != nil {
		return reg, false, fmt.Errorf("read the root's adoptions: %w", err)
	}
	why := pathtrust.Effective().Foreign(fi)
	if why != "" {
		why = "it " + why
	}
	if !fi.Mode().IsRegular() {
		why = "it is a " + pathtrust.TypeName(fi.Mode()) + ", not a regular file"
	}
	if why != "" {
		return reg, true, trustErr(pathtrust.UnsafeOf(p, fi, why), nil, false)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return reg, true, fmt.Errorf("read the root's adoptions: %w", err)
	}
	if _, err := format.Read(p, b, adoptedVersion); errors.Is(err, format.ErrNewer) {
		return reg, true, fmt.Errorf("the root's adoptions: %w", err) // never replaced by this release's
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		return reg, true, fmt.Errorf("the root's record of adopted states %s cannot be read (%v); the SDK only ever replaces it whole, "+
			"so something else changed it: restore it, or remove it once no two instances hold one state (it is rebuilt from the instances' own records)", p, err)
	}
	return reg, true, nil
}

// writeAdopted replaces the root's register atomically: a reader, and a
// process killed mid-write, see the old register or the new one. The
// caller holds the adoption lock, so no other writer is under way and
// any temp file of the register found beside it is a killed writer's:
// removed here, its only sweeper.
func (m *Manager) writeAdopted(reg adoptedRegister) error {
	reg.Version = adoptedVersion
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	left, _ := filepath.Glob(filepath.Join(m.root, atomicfile.TempPrefix+adoptedFile+"-*"))
	for _, p := range left {
		_ = os.Remove(p) // one left again is removed by the next write
	}
	if err := atomicfile.WriteFile(filepath.Join(m.root, adoptedFile), b, 0o600); err != nil {
		return fmt.Errorf("record the adoption: %w", err)
	}
	return nil
}

// claimsNow returns every claim on a state under the root as the
// instances' own adoption records show it now, the caller holding the
// adoption lock. The register is only an index of those records, never
// believed over them: a release that does not know it (the one before
// it kept adoptions only in each instance's record) may have adopted
// into an instance, or removed an owner, without touching it. So every
// adoption reads every home's record (adoptions are rare: once per
// legacy state; a root of many instances costs one directory read and
// one small file per home, see BenchmarkAdoptionScan), and a claim
// counts only as an instance's record, or a workdir, bears it out:
//
//   - A claim an instance's record lists is believed: the register's
//     entry for it, or one made from the record (named by the workdir ID
//     alone when the register never named the instance). A record is
//     believed only when the home and the record are the effective
//     user's (invariant 12).
//   - A claim the register holds and no record lists is an adoption cut
//     off between its claim and its record: believed while the
//     instance's workdir holds a copy of that state (its lineage, or a
//     state the SDK cannot read), which the instance would run on;
//     dropped once the home is gone (Remove, or a release without the
//     register, deleted it) or holds no copy (the adoption was cut off
//     before it copied anything, or the home was made again since).
//
// stale is true when the register does not say exactly that: the
// adoption under way rewrites it once it may go on.
func (m *Manager) claimsNow() (claims []claim, stale bool, err error) {
	reg, _, err := m.readAdopted()
	if err != nil {
		return nil, false, err
	}
	recorded, err := m.recordedClaims()
	if err != nil {
		return nil, false, err
	}
	names := map[string]claim{}
	for _, c := range reg.Claims {
		names[c.ID] = c
	}
	inRecord := func(c claim) bool {
		return slices.ContainsFunc(recorded[c.ID], func(r claim) bool { return r.Source == c.Source })
	}
	for _, c := range reg.Claims {
		if inRecord(c) || m.holdsCopy(c) {
			claims = append(claims, c)
		} else {
			stale = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(recorded)) {
		for _, r := range recorded[id] {
			if slices.ContainsFunc(claims, func(c claim) bool { return c.ID == id && c.Source == r.Source }) {
				continue
			}
			r.Stack, r.Instance = names[id].Stack, names[id].Instance
			claims = append(claims, r)
			stale = true
		}
	}
	return claims, stale, nil
}

// recordedClaims returns, by workdir ID, the adoptions every home's own
// record (ROOT/ID/.tfisolate/state.json) lists, believed only when the
// home and the record are the effective user's (invariant 12).
func (m *Manager) recordedClaims() (map[string][]claim, error) {
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return nil, fmt.Errorf("read the root's adoptions: %w", err)
	}
	out := map[string][]claim{}
	for _, de := range ents {
		// Homes are named by ID, which has no dot; the root's own
		// entries all start with one.
		if !de.IsDir() || strings.Contains(de.Name(), ".") {
			continue
		}
		home := filepath.Join(m.root, de.Name())
		// Most homes adopted nothing: their record (if any) is read, but
		// not parsed, and nothing else about them is looked at. The few
		// that did are read as every reader of the record reads it.
		b, err := os.ReadFile(stateRecordPath(home))
		if err != nil || !bytes.Contains(b, []byte(`"adopted"`)) || checkHome(home) != nil {
			continue
		}
		rec := readStateRecord(home)
		fi, err := os.Lstat(stateRecordPath(home))
		if err != nil || !fi.Mode().IsRegular() || pathtrust.Effective().Foreign(fi) != "" {
			continue
		}
		for _, a := range rec.Adopted {
			out[de.Name()] = append(out[de.Name()], claim{ID: de.Name(), Source: a.Source, Real: realPath(a.Source), Lineage: a.Lineage, Time: a.Time})
		}
	}
	return out, nil
}

// holdsCopy reports whether the workdir of c's instance holds a copy of
// the state c claims: a state file (as Remove finds them) of c's
// lineage, or one the SDK cannot read. A claim without a lineage cannot
// be told from its copy and is believed while the home exists.
func (m *Manager) holdsCopy(c claim) bool {
	home := filepath.Join(m.root, c.ID)
	if _, err := os.Lstat(home); err != nil {
		return !errors.Is(err, fs.ErrNotExist) // gone is gone; anything else: kept, to be safe
	}
	if c.Lineage == "" {
		return true
	}
	found, err := walkState(home, func(p string) bool {
		st := readState(p)
		return st.lineage == c.Lineage || st.encrypted || !st.complete && !st.empty()
	})
	return err != nil || len(found) > 0
}

// nameOwner gives the root's register the stack and instance of id, an
// instance whose own record lists adoptions (rec) that the register does
// not name it for: made by a release without the register, they would
// otherwise be named by the workdir ID alone. It is called by a Prepare
// of the owner while the component source still holds the state, which
// is when another instance may ask for it; a register that names it
// already costs one read, and nothing is locked.
func (m *Manager) nameOwner(ctx context.Context, id, stack, instance string, rec stateRecord) (err error) {
	reg, _, err := m.readAdopted()
	if err != nil {
		return err
	}
	named := func(a adoptedState) bool {
		return slices.ContainsFunc(reg.Claims, func(c claim) bool {
			return c.ID == id && c.Source == a.Source && c.Stack == stack && c.Instance == instance
		})
	}
	if !slices.ContainsFunc(rec.Adopted, func(a adoptedState) bool { return !named(a) }) {
		return nil
	}
	fl, err := m.lockAdoptions(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlockAdoptions(fl)) }()
	claims, _, err := m.claimsNow()
	if err != nil {
		return err
	}
	renamed := false
	for i := range claims {
		if c := &claims[i]; c.ID == id && (c.Stack != stack || c.Instance != instance) {
			c.Stack, c.Instance, renamed = stack, instance, true
		}
	}
	if !renamed {
		return nil // its record is not believed (invariant 12): nothing to name
	}
	return m.writeAdopted(adoptedRegister{Claims: claims})
}

// releaseAdoptions drops every claim of the instance id from the root's
// register: its workdir, and the state it adopted with it, is gone.
func (m *Manager) releaseAdoptions(ctx context.Context, id string) (err error) {
	reg, _, err := m.readAdopted()
	if err != nil {
		return err
	}
	owns := func(c claim) bool { return c.ID == id }
	if !slices.ContainsFunc(reg.Claims, owns) {
		return nil // nothing to release: no flock taken
	}
	fl, err := m.lockAdoptions(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, unlockAdoptions(fl)) }()
	if reg, _, err = m.readAdopted(); err != nil {
		return err
	}
	reg.Claims = slices.DeleteFunc(reg.Claims, owns)
	return m.writeAdopted(reg)
}
