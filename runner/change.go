package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfisolate/tfisolate/internal/affected"
	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/fingerprint"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/inplace"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// appliedName records, in an instance's data dir, the inputs of its last
// successful apply, for WithSkipUnchanged.
const appliedName = "tfisolate-applied.json"

type appliedRecord struct {
	Version int    `json:"version,omitempty"` // appliedVersion when written
	Inputs  string `json:"inputs"`
}

// inputsDigest covers everything an apply of the unit reads that the
// runner can see: the workdir's content (the component, every local
// module it reaches, the generated files: workdir.Workdir.Digest), the
// lock file, the engine and its version, the arguments, and what
// externalInputs covers (workspace, var and -backend-config file
// contents, TF_VAR_*, TF_CLI_ARGS*, the unit's own environment).
func (x *unitRun) inputsDigest() string {
	fp := fingerprint.New()
	fp.AddString("workdir", x.w.Digest)
	fp.AddFile("lockfile", filepath.Join(x.dir, lockFileName))
	fp.AddString("engine", fingerprint.EngineID(x.rs.eng))
	args, _ := json.Marshal(x.u.Args)
	fp.Add("args", args)
	fp.AddString("external", x.externalInputs())
	return fp.Sum()
}

// unchanged reports whether the unit's inputs are those of its last
// successful apply. A newer release's record is an ErrNewerFormat: this
// release can neither believe it nor forget it (the newer one would
// then skip a unit whose state is no longer its inputs').
func (x *unitRun) unchanged(inputs string) (bool, error) {
	var rec appliedRecord
	found, err := readRecord(filepath.Join(x.w.DataDir, appliedName), appliedVersion, &rec)
	if errors.Is(err, ErrNewerFormat) {
		return false, err
	}
	return found && err == nil && rec.Inputs != "" && rec.Inputs == inputs, nil
}

// appliedSize is the size the applied record is created with: every
// later record, and every forgetting, is then one synced write in place
// (internal/inplace), about 80 us of CPU against 0.5 ms for a new file,
// its fsync, a rename and the directory's fsync (measured on this
// project's ext4). A record is far shorter, within the first 512-byte
// sector: a write the machine's power loss tears reads as no record (or
// as inputs that match none), never as another apply's.
const appliedSize = 512

// recordApplied records, synced, the inputs of a successful apply.
func (x *unitRun) recordApplied(inputs string) error {
	p := filepath.Join(x.w.DataDir, appliedName)
	b, _ := json.Marshal(appliedRecord{Version: appliedVersion, Inputs: inputs})
	return inplace.WriteFile(p, b, atomicfile.Record, appliedSize, true)
}

// forgetApplied makes the applied record say no apply is known, synced,
// before a command that may change the state runs: a machine that goes
// down during that command never brings the old record back, which
// would let a later Run whose inputs are the old ones skip a unit whose
// state is no longer theirs. A record already saying so is left alone.
func (x *unitRun) forgetApplied() error {
	p := filepath.Join(x.w.DataDir, appliedName)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		if _, err := format.Read(p, b, appliedVersion); errors.Is(err, ErrNewerFormat) {
			return err
		}
	}
	var rec appliedRecord
	if err == nil && json.Unmarshal(b, &rec) == nil && rec.Inputs == "" {
		return nil
	}
	if ok, err := inplace.Rewrite(p, fmt.Appendf(nil, `{"version":%d}`, appliedVersion), atomicfile.Record, true); ok || err != nil {
		return err
	}
	// Not rewritable in place (a link, say): removed, and the removal
	// synced.
	if err := os.Remove(p); err != nil {
		return err
	}
	return atomicfile.SyncDir(x.w.DataDir)
}

// Affected returns the IDs of the units that a change to any of paths
// can affect: paths inside a unit's component directory or inside a
// local module it reaches (through any number of module calls, found
// with the same module walk the workdir uses, under both engines'
// configuration files since a unit here has no engine: a module called
// only from a .tofu file counts, and so does one called from a main.tf
// that a main.tofu hides from OpenTofu), or naming one of its
// absolute var files or -backend-config files. A symlink inside those
// directories (common.tf -> ../../shared/common.tf, a linked templates
// dir) is copied into the workdir as what it points at, so a change to
// its target counts too. Relative paths are taken relative to base (for
// example a repository root, with the output of git diff --name-only).
// Symlinks are resolved on both sides. Units are returned in the order
// given; generated files and variables are not paths and are not seen.
//
// A module source that is an expression (early evaluation) reaches the
// module the unit's variables select, evaluated as the runner does for
// the workdir (Args.Vars, Args.VarFiles, TF_VAR_* in Unit.Env and the
// process, the component's variable files; Workdir.ModuleSources where
// the caller gives them), by the rule of each engine (a source an engine
// refuses, such as one reading a variable that is not const under
// Terraform, reaches no module under it); where it cannot be evaluated
// (a value only Generate gives, a function the SDK does not have), every
// change counts as affecting the unit:
// Affected may report more units than a change affects, never fewer.
func Affected(units []Unit, base string, paths ...string) ([]string, error) {
	for _, p := range paths {
		if p == "" {
			return nil, fmt.Errorf("%w: Affected: empty path", ErrBadOption)
		}
	}
	in := make([]affected.Unit, len(units))
	for i := range units {
		u := &units[i]
		if u.Workdir.Source == "" {
			return nil, fmt.Errorf("%w: unit %s has no source", ErrInvalidUnit, u.id())
		}
		in[i] = affected.Unit{
			ID:            u.id(),
			Source:        u.Workdir.Source,
			VarFiles:      u.Args.VarFiles,
			BackendConfig: u.Args.BackendConfig,
			ModuleSources: u.Workdir.ModuleSources,
			Evaluate: func(rule modtree.Files) (map[string]string, []string, error) {
				e, err := sourceEarlyInputs(u.Workdir.Source, u.Workdir.Files, rule, u)
				if err != nil {
					return nil, nil, err
				}
				// Under the rules of the engine that reads these files; a
				// source that engine refuses reaches no module under it.
				r := earlyeval.NewestRules(ruleEngine(rule))
				values, unknown := e.ModuleSources(r)
				refused := e.Refused(r)
				unknown = slices.DeleteFunc(unknown, func(u string) bool { return slices.Contains(refused, u) })
				return values, unknown, nil
			},
		}
	}
	return affected.Units(in, base, paths), nil
}
