package workdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
// state.json) cannot say that, since a second instance never reads the
// first one's, so the root keeps one register of every adoption made
// under it, ROOT/.adopted.json, naming each adopted state's owner.
// It is read, checked and extended under one root-wide flock,
// ROOT/.locks/.adopted.lock, held from the check to the record, so two
// processes adopting into two instances at once end with one owner.
// Adoptions are rare (once per legacy state), so one lock for the root
// costs nothing a run would notice, and a Prepare that adopts nothing
// never takes it.

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

// adoptedSoFar returns the root's register, under the adoption lock. A
// root with no register yet (made by a version that kept adoptions only
// in each instance's record) gets one from those records: every home's
// state.json that lists an adoption, believed only when the home and
// the record are the effective user's (invariant 12). It is read once:
// the next adoption writes the register.
func (m *Manager) adoptedSoFar() (adoptedRegister, error) {
	reg, exists, err := m.readAdopted()
	if err != nil || exists {
		return reg, err
	}
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return reg, fmt.Errorf("read the root's adoptions: %w", err)
	}
	for _, de := range ents {
		// Homes are named by ID, which has no dot; the root's own
		// entries all start with one.
		if !de.IsDir() || strings.Contains(de.Name(), ".") {
			continue
		}
		home := filepath.Join(m.root, de.Name())
		if checkHome(home) != nil {
			continue
		}
		p := stateRecordPath(home)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || pathtrust.Effective().Foreign(fi) != "" {
			continue
		}
		for _, a := range readStateRecord(home).Adopted {
			reg.Claims = append(reg.Claims, claim{ID: de.Name(), Source: a.Source, Real: realPath(a.Source), Lineage: a.Lineage, Time: a.Time})
		}
	}
	return reg, nil
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
