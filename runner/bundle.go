package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/bundle"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// A plan bundle's format (a tar of the saved plan, its JSON rendering,
// the lock file and a manifest with a digest and an optional MAC) is
// package bundle's; here are the commands and the steps that decide
// which plan goes in one and whether an imported one applies here.

// ErrPlanBundle reports a plan bundle ImportPlan refuses: not a bundle,
// damaged, altered (its digest or MAC does not match), checked with a key
// it was not made with (or without one), another unit's, or one whose
// state is not in a backend every machine reaches.
var ErrPlanBundle = errors.New("plan bundle refused")

// bundleSpec is what ExportPlan and ImportPlan are given.
type bundleSpec struct {
	dir string
	key []byte
}

// ExportPlan returns a command that writes each unit's saved plan (see
// SavePlan) as one self-contained file, a plan bundle, at BundlePath(dir,
// unit ID): the plan, its JSON rendering, the dependency lock file and the
// record of what the plan was made from (the workdir's content digest, the
// unit's arguments, environment and inputs, the workspace, the engine and
// its version). A plan that is missing or already stale for the workdir
// is not exported (ErrNoPlan, ErrStalePlan), and neither is the plan of
// a unit whose state is local to the machine (ErrLocalState: terraform's
// local backend, declared or implied, keeps it in files here, so another
// machine would apply the plan against an empty state). The manifest
// records the backend's type. With a key, the bundle carries an
// HMAC-SHA256 of its content, which ImportPlan given the same key
// checks; a nil key means no MAC, and an empty non-nil key (what an
// unset secret gives) is refused before anything runs (ErrBadOption).
// The bundle is written 0600, atomically; it holds sensitive values as
// terraform's plan does. No terraform process runs.
func ExportPlan(dir string, key []byte) Command {
	return Command{name: "export-plan", kind: kindExportPlan, phase: PhaseStep, bundle: bundleSpec{dir: dir, key: key}}
}

// ImportPlan returns a command that takes each unit's plan bundle from
// BundlePath(dir, unit ID), written by ExportPlan on another machine or
// workdir root, and makes it the unit's saved plan, for ApplyPlan (or
// ApplyDestroyPlan) to apply exactly. Before anything is written it
// checks the bundle: its members against its digest, and against its
// HMAC when a key is given; a key and a MAC go together, so a bundle
// without a MAC is refused when a key is given, and a bundle with one
// when none is (the importing side's secret is missing: a digest alone
// anyone can recompute); an empty non-nil key is refused before anything
// runs (ErrBadOption). It checks that the bundle is for this unit, that
// its state is in a backend every machine reaches, by the bundle's
// record (an older export's bundle records none and is refused) and by
// this unit's own configuration (ErrLocalState), and that it is not
// stale here: the workdir's source and generated files, the unit's
// arguments, environment and inputs, the workspace and the engine must
// be what the plan was made from. A bundle that fails is refused with
// ErrPlanBundle or ErrStalePlan naming what differs, and the unit's
// workdir and saved plan are left as they were. No terraform process
// runs. The bundle's lock file becomes the workdir's, so the apply uses
// the providers the plan was made with.
//
// A plan is spent once applied, wherever: applying the same bundle again
// on another machine fails with ErrStalePlan (terraform refuses a plan
// whose state has moved on).
func ImportPlan(dir string, key []byte) Command {
	return Command{name: "import-plan", kind: kindImportPlan, phase: PhaseStep, bundle: bundleSpec{dir: dir, key: key}}
}

// BundlePath is where ExportPlan writes, and ImportPlan reads, the plan
// bundle of the unit with the given ID in dir: a file name made from the
// ID (readable, safe on every filesystem, never the same for two IDs).
func BundlePath(dir, unitID string) string {
	return bundle.Path(dir, unitFileName(unitID))
}

// PlanSHA256 is the saved plan's sha256: with LockSHA256, what makes
// planMeta the record a bundle carries (bundle.Record).
func (m planMeta) PlanSHA256() string { return m.Plan }

// LockSHA256 is the sha256 of the lock file the plan was made with.
func (m planMeta) LockSHA256() string { return m.LockFile }

// exportPlan writes the unit's saved plan as a bundle.
func (x *unitRun) exportPlan() error {
	_, file, jsonFile, _ := x.planPaths()
	rec, err := x.savedPlanMeta()
	if err != nil {
		return err
	}
	saved, err := x.checkSavedPlan(rec.Destroy, true)
	if err != nil {
		return err
	}
	backend, err := x.portableBackend("export plan of")
	if err != nil {
		return err
	}
	members := map[string][]byte{}
	for name, p := range map[string]string{bundle.PlanMember: file, bundle.PlanJSONMember: jsonFile, bundle.LockMember: filepath.Join(x.dir, lockFileName)} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && name == bundle.LockMember {
			continue
		}
		if err != nil {
			return fmt.Errorf("export plan of %s: %w", x.id, err)
		}
		members[name] = data
	}
	if sum := sha256.Sum256(members[bundle.PlanMember]); hex.EncodeToString(sum[:]) != saved.Plan {
		return fmt.Errorf("%w: the plan file changed while it was read", ErrStalePlan)
	}
	dst := BundlePath(x.rs.cmd.bundle.dir, x.id)
	m := bundle.Manifest[planMeta]{Unit: x.id, Record: saved, Backend: backend}
	size, err := bundle.Write(dst, &m, members, x.rs.cmd.bundle.key)
	if err != nil {
		return fmt.Errorf("export plan of %s: %w", x.id, err)
	}
	x.out.note(fmt.Sprintf("plan exported to %s (%d bytes)", dst, size))
	return nil
}

// portableBackend returns the type of the backend that keeps the unit's
// state, as the unit's engine reads the workdir's configuration
// (generated files and override files included), when that state is
// reachable from another machine; otherwise an error wrapping
// ErrLocalState that starts with what (ExportPlan, ImportPlan) names
// the unit and says why. The local backend, declared or implied, keeps
// the state in files on the machine the unit runs on: applied on
// another machine, a bundle would meet that machine's own state (empty:
// terraform's stale-plan check has nothing to compare) and create
// everything again. A local backend's path outside the workdir counts
// as local too: the SDK cannot tell a shared filesystem from a private
// one, and guessing wrong applies a plan twice. -backend-config values
// without a backend block configure nothing (terraform warns, and uses
// the local backend), so they do not make the state remote.
func (x *unitRun) portableBackend(what string) (string, error) {
	b, err := modtree.ReadBackend(x.dir, nil, configRule(x.rs.eng.Kind))
	if err != nil {
		// A saved plan was made from this configuration, so terraform
		// read it; what the SDK cannot read here is a local backend's
		// path built from a variable (OpenTofu's early evaluation).
		return "", fmt.Errorf("%w: %s unit %s: cannot tell where its state lives (%w); a plan bundle needs a backend every machine reaches",
			ErrLocalState, what, x.id, err)
	}
	if !b.Local() {
		return b.Type, nil
	}
	var why string
	switch {
	case b.Type == "local":
		why = fmt.Sprintf(`its backend "local" (%s) keeps the state in a file on this machine`, filepath.Base(b.File))
	case len(x.u.Args.BackendConfig) > 0:
		why = "it has no backend block, so terraform ignores its -backend-config and keeps the state in the local backend, in its workdir on this machine"
	default:
		why = "it has no backend block, so terraform keeps the state in the local backend, in its workdir on this machine"
	}
	return "", fmt.Errorf("%w: %s unit %s: %s; a plan bundle applied on another machine would be applied against that machine's "+
		"own, empty state and create everything again. Give the unit a backend every machine reaches (s3, gcs, azurerm, pg, http, ...) "+
		"to carry its plans, or apply its saved plan on this machine (ApplyPlan)", ErrLocalState, what, x.id, why)
}

// readBundle reads and checks the bundle at p for unit id (see
// bundle.Read), and says why it refuses one with ErrPlanBundle, and
// ErrLocalState when the bundle says its state is local.
func readBundle(p, id string, key []byte) (*bundle.Manifest[planMeta], map[string][]byte, error) {
	m, members, err := bundle.Read[planMeta](p, id, key)
	var refused *bundle.RefusedError
	switch {
	case errors.As(err, &refused) && refused.LocalState:
		return nil, nil, fmt.Errorf("%w: %w: %w", ErrPlanBundle, ErrLocalState, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %w", ErrPlanBundle, err)
	}
	return m, members, nil
}

// importPlan checks the unit's bundle, installs it as its saved plan and
// returns the plan's summary.
func (x *unitRun) importPlan() (stepOutcome, error) {
	src := BundlePath(x.rs.cmd.bundle.dir, x.id)
	m, members, err := readBundle(src, x.id, x.rs.cmd.bundle.key)
	if err != nil {
		return stepOutcome{}, err
	}
	// This unit's own configuration decides where the apply would go:
	// a bundle's record alone can be written by anyone without the key.
	backend, err := x.portableBackend("import plan of")
	if err != nil {
		return stepOutcome{}, fmt.Errorf("%w: %s: %w", ErrPlanBundle, src, err)
	}
	if backend != m.Backend {
		return stepOutcome{}, fmt.Errorf("%w: %s: the plan of unit %s was made with its state in a backend of type %q, this unit's is %q",
			ErrPlanBundle, src, x.id, m.Backend, backend)
	}
	saved := m.Record
	now := x.planMade()
	now.Destroy, now.Plan, now.LockFile = saved.Destroy, saved.Plan, saved.LockFile
	if why := x.staleAgainst(saved, now, saved.Destroy); why != "" {
		return stepOutcome{}, fmt.Errorf("%w: the bundle %s (made on %s at %s) does not match this workdir: %s",
			ErrStalePlan, src, m.Host, m.Made.Format(time.RFC3339), why)
	}
	dir, file, jsonFile, metaFile := x.planPaths()
	for _, old := range []string{metaFile, x.applyingPath(), x.redactedPath()} {
		if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return stepOutcome{}, fmt.Errorf("remove old saved plan: %w", err)
		}
	}
	if err := atomicfile.MkdirPrivate(dir); err != nil {
		return stepOutcome{}, fmt.Errorf("saved plan dir: %w", err)
	}
	lock := filepath.Join(x.dir, lockFileName)
	if _, ok := members[bundle.LockMember]; !ok {
		if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return stepOutcome{}, fmt.Errorf("import plan of %s: the plan was made without a lock file: %w", x.id, err)
		}
	}
	for name, dst := range map[string]string{bundle.PlanMember: file, bundle.PlanJSONMember: jsonFile, bundle.LockMember: lock} {
		data, ok := members[name]
		if !ok {
			continue
		}
		perm := os.FileMode(0o600) // the plan holds sensitive values as terraform renders them
		if name == bundle.LockMember {
			perm = 0o644
		}
		if err := atomicfile.WriteFile(dst, data, perm); err != nil {
			return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
		}
	}
	if js, ok := members[bundle.PlanJSONMember]; ok {
		if err := x.writeRedacted(js); err != nil {
			return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
		}
	}
	// The record last: until it is there, ApplyPlan finds no plan.
	b, _ := json.MarshalIndent(saved, "", "  ")
	if err := atomicfile.WriteFile(metaFile, b, atomicfile.Record); err != nil {
		return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
	}
	var out stepOutcome
	if sum, err := summarizePlan(members[bundle.PlanJSONMember]); err == nil {
		sum.File, sum.JSONFile, sum.RedactedJSONFile, sum.DestroyPlan = file, jsonFile, x.redactedPath(), saved.Destroy
		out.plan, out.hasChanges = sum, sum.Add+sum.Change+sum.Destroy+sum.Import > 0
	}
	x.out.note(fmt.Sprintf("plan imported from %s (made on %s at %s)", src, m.Host, m.Made.Format(time.RFC3339)))
	return out, nil
}
