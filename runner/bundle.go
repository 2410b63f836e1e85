package runner

import (
	"archive/tar"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// A plan bundle carries one unit's saved plan to another machine or
// workdir root: an uncompressed tar of
//
//	manifest.json   what the plan was made from (the saved plan's record)
//	                and the sha256 of every other member, with a digest of
//	                all of it and, when the host gave a key, an HMAC
//	plan.tfplan     terraform's saved plan
//	plan.json       terraform show -json of it
//	lock.hcl        the dependency lock file the plan was made with, when
//	                there was one
//
// It holds what terraform's plan holds, sensitive values included: it is
// written 0600, and it is for the jobs that apply it, not for a PR
// comment.
const (
	bundleFormat   = "tfisolate-plan-bundle/1"
	bundleExt      = ".tfplan-bundle"
	bundleManifest = "manifest.json"
	bundlePlan     = "plan.tfplan"
	bundleJSON     = "plan.json"
	bundleLock     = "lock.hcl"

	// maxBundleBytes bounds what an import reads: a bundle is refused
	// past it rather than read into memory without end.
	maxBundleBytes = 1 << 30
)

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
	return filepath.Join(dir, unitFileName(unitID)+bundleExt)
}

// manifest is a bundle's manifest.json.
type manifest struct {
	Format string   `json:"format"`
	Unit   string   `json:"unit"`
	Meta   planMeta `json:"meta"`
	// Backend is the type of the backend the unit's state is in ("s3",
	// "http", "cloud", ...). ExportPlan never writes "local" or "": a
	// bundle without it is an older export's, refused on import.
	Backend string            `json:"backend,omitempty"`
	Files   map[string]string `json:"files"`          // member name: sha256
	Digest  string            `json:"digest"`         // sha256 of the fields above
	MAC     string            `json:"mac,omitempty"`  // HMAC-SHA256 of the same, with the host's key
	Made    time.Time         `json:"made"`           // when the bundle was written; not covered
	Host    string            `json:"host,omitempty"` // where; not covered
}

// content is what the digest and the MAC cover. Backend is left out
// when empty, so an older export's bundle still matches its digest and
// is refused for what it lacks, by name.
func (m *manifest) content() []byte {
	b, _ := json.Marshal(struct {
		Format  string            `json:"format"`
		Unit    string            `json:"unit"`
		Meta    planMeta          `json:"meta"`
		Backend string            `json:"backend,omitempty"`
		Files   map[string]string `json:"files"`
	}{m.Format, m.Unit, m.Meta, m.Backend, m.Files})
	return b
}

func bundleMAC(key, content []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// exportPlan writes the unit's saved plan as a bundle.
func (x *unitRun) exportPlan() error {
	_, file, jsonFile, metaFile := x.planPaths()
	b, err := os.ReadFile(metaFile)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: run SavePlan first (%s)", ErrNoPlan, metaFile)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", metaFile, err)
	}
	var rec planMeta
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%w: unreadable record %s: %w", ErrStalePlan, metaFile, err)
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
	for name, p := range map[string]string{bundlePlan: file, bundleJSON: jsonFile, bundleLock: filepath.Join(x.dir, lockFileName)} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && name == bundleLock {
			continue
		}
		if err != nil {
			return fmt.Errorf("export plan of %s: %w", x.id, err)
		}
		members[name] = data
	}
	if sha256Hex(members[bundlePlan]) != saved.Plan {
		return fmt.Errorf("%w: the plan file changed while it was read", ErrStalePlan)
	}
	host, _ := os.Hostname()
	m := manifest{Format: bundleFormat, Unit: x.id, Meta: saved, Backend: backend, Files: map[string]string{}, Made: time.Now().UTC(), Host: host}
	for name, data := range members {
		m.Files[name] = sha256Hex(data)
	}
	m.Digest = sha256Hex(m.content())
	if x.rs.cmd.bundle.key != nil {
		m.MAC = bundleMAC(x.rs.cmd.bundle.key, m.content())
	}
	mb, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: m.Made, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	err = add(bundleManifest, mb)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if err == nil {
			err = add(name, members[name])
		}
	}
	if err = errors.Join(err, tw.Close()); err != nil {
		return fmt.Errorf("export plan of %s: %w", x.id, err)
	}
	dst := BundlePath(x.rs.cmd.bundle.dir, x.id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("export plan of %s: %w", x.id, err)
	}
	if err := atomicfile.WriteFile(dst, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("export plan of %s: %w", x.id, err)
	}
	x.out.note(fmt.Sprintf("plan exported to %s (%d bytes)", dst, buf.Len()))
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

// readBundle reads and checks the bundle at p for unit id: its form, its
// members against its digest, its MAC when key is given.
func readBundle(p, id string, key []byte) (*manifest, map[string][]byte, error) {
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrPlanBundle, p, fmt.Sprintf(format, a...))
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, refuse("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, nil, refuse("not a regular file")
	}
	tr := tar.NewReader(io.LimitReader(f, maxBundleBytes))
	members := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, refuse("not a plan bundle: %v", err)
		}
		switch h.Name {
		case bundleManifest, bundlePlan, bundleJSON, bundleLock:
		default:
			return nil, nil, refuse("unexpected member %q", h.Name)
		}
		if _, dup := members[h.Name]; dup || h.Typeflag != tar.TypeReg {
			return nil, nil, refuse("member %q is repeated or not a file", h.Name)
		}
		if total += h.Size; h.Size < 0 || total > maxBundleBytes {
			return nil, nil, refuse("larger than %d bytes", int64(maxBundleBytes))
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, refuse("read %s: %v", h.Name, err)
		}
		members[h.Name] = data
	}
	var m manifest
	if err := json.Unmarshal(members[bundleManifest], &m); err != nil {
		return nil, nil, refuse("no readable manifest: %v", err)
	}
	delete(members, bundleManifest)
	switch {
	case m.Format != bundleFormat:
		return nil, nil, refuse("format %q, want %q", m.Format, bundleFormat)
	case m.Digest != sha256Hex(m.content()):
		return nil, nil, refuse("the manifest does not match its digest (damaged or altered)")
	case m.Unit != id:
		return nil, nil, refuse("it is the plan of unit %s, not of %s", m.Unit, id)
	case key == nil && m.MAC != "":
		// A keyed bundle checked without a key is checked by its digest
		// alone, which anyone can recompute: the apply job's secret is
		// missing, not the bundle's.
		return nil, nil, refuse("it carries a MAC (exported with a key), and no key was given: give ImportPlan the key ExportPlan had")
	case key != nil && m.MAC == "":
		return nil, nil, refuse("it carries no MAC (exported without a key), and a key was given: export it again with the key " +
			"(ExportPlan(dir, key)); a bundle without a MAC could be anyone's")
	case key != nil && !hmac.Equal([]byte(m.MAC), []byte(bundleMAC(key, m.content()))):
		return nil, nil, refuse("its MAC does not match the key (altered, or made with another key)")
	}
	switch m.Backend {
	case "":
		return nil, nil, refuse("it records no backend (an older ExportPlan's bundle, or altered): its state may be local to the " +
			"machine that planned; export the plan again with this version")
	case "local":
		return nil, nil, fmt.Errorf("%w: %w: %s: it says its state is in the local backend of the machine that planned (altered?)",
			ErrPlanBundle, ErrLocalState, p)
	}
	if len(m.Files) != len(members) {
		return nil, nil, refuse("the manifest lists %d members, the bundle holds %d", len(m.Files), len(members))
	}
	for name, data := range members {
		if m.Files[name] != sha256Hex(data) {
			return nil, nil, refuse("member %s does not match the manifest (damaged or altered)", name)
		}
	}
	if members[bundlePlan] == nil || m.Files[bundlePlan] != m.Meta.Plan || m.Files[bundleLock] != m.Meta.LockFile {
		return nil, nil, refuse("its plan or lock file is not the one its record describes")
	}
	return &m, members, nil
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
	saved := m.Meta
	now := x.planMade()
	now.Destroy, now.Plan, now.LockFile = saved.Destroy, saved.Plan, saved.LockFile
	if why := staleness(saved, now, saved.Destroy); why != "" {
		return stepOutcome{}, fmt.Errorf("%w: the bundle %s (made on %s at %s) does not match this workdir: %s",
			ErrStalePlan, src, m.Host, m.Made.Format(time.RFC3339), why)
	}
	dir, file, jsonFile, metaFile := x.planPaths()
	for _, old := range []string{metaFile, x.applyingPath(), x.redactedPath()} {
		if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return stepOutcome{}, fmt.Errorf("remove old saved plan: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return stepOutcome{}, fmt.Errorf("saved plan dir: %w", err)
	}
	lock := filepath.Join(x.dir, lockFileName)
	if _, ok := members[bundleLock]; !ok {
		if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return stepOutcome{}, fmt.Errorf("import plan of %s: the plan was made without a lock file: %w", x.id, err)
		}
	}
	for name, dst := range map[string]string{bundlePlan: file, bundleJSON: jsonFile, bundleLock: lock} {
		data, ok := members[name]
		if !ok {
			continue
		}
		perm := os.FileMode(0o600) // the plan holds sensitive values as terraform renders them
		if name == bundleLock {
			perm = 0o644
		}
		if err := atomicfile.WriteFile(dst, data, perm); err != nil {
			return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
		}
	}
	if js, ok := members[bundleJSON]; ok {
		if err := x.writeRedacted(js); err != nil {
			return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
		}
	}
	// The record last: until it is there, ApplyPlan finds no plan.
	b, _ := json.MarshalIndent(saved, "", "  ")
	if err := atomicfile.WriteFile(metaFile, b, 0o644); err != nil {
		return stepOutcome{}, fmt.Errorf("import plan of %s: %w", x.id, err)
	}
	var out stepOutcome
	if sum, err := summarizePlan(members[bundleJSON]); err == nil {
		sum.File, sum.JSONFile, sum.RedactedJSONFile, sum.DestroyPlan = file, jsonFile, x.redactedPath(), saved.Destroy
		out.plan, out.hasChanges = sum, sum.Add+sum.Change+sum.Destroy+sum.Import > 0
	}
	x.out.note(fmt.Sprintf("plan imported from %s (made on %s at %s)", src, m.Host, m.Made.Format(time.RFC3339)))
	return out, nil
}
