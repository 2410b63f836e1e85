package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/fingerprint"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/redact"
	"github.com/tfisolate/tfisolate/internal/retry"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// A saved plan lives in the instance's data dir, which no refresh of the
// workdir touches:
//
//	DATADIR/tfisolate-plan/plan.tfplan     terraform's saved plan
//	DATADIR/tfisolate-plan/plan.json       terraform show -json of it
//	DATADIR/tfisolate-plan/plan.redacted.json  the same, sensitive values redacted
//	DATADIR/tfisolate-plan/plan.meta.json  what it was made from; written last
//	DATADIR/tfisolate-plan/applying.json   an apply of the plan under way
const (
	planDirName      = "tfisolate-plan"
	planFileName     = "plan.tfplan"
	planJSONName     = "plan.json"
	planRedactedName = "plan.redacted.json"
	planMetaName     = "plan.meta.json"
	planApplyingName = "applying.json"
)

// planApplying is written right before terraform applies a saved plan,
// and removed once the apply ended without changing anything or the plan
// is spent. Found later, it says an apply of that plan was cut off (the
// host crashed, terraform was killed, or it failed after it had started
// changing infrastructure): applying the plan again could create what
// the first apply created a second time, so the plan is refused.
type planApplying struct {
	Version int       `json:"version,omitempty"` // applyingVersion when written
	Plan    string    `json:"plan"`              // sha256 of the plan file being applied
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// The parts of a plan's record (planMeta.Parts) that staleness says more
// about than their names: the component's files (which ones) and the
// workspace (which ones).
const (
	componentFilesPart = "the component's files"
	workspacePart      = "workspace"
)

// planMeta records what a saved plan was made from, so that ApplyPlan
// can refuse a plan that no longer matches the workdir.
type planMeta struct {
	// Version is the record's format (planMetaVersion when written;
	// covered by a bundle's digest, whose format bumps with it).
	Version  int       `json:"version,omitempty"`
	Digest   string    `json:"digest"`    // workdir.Workdir.Digest: source set and generated files
	LockFile string    `json:"lock_file"` // sha256 of .terraform.lock.hcl, "" when none
	Engine   string    `json:"engine"`    // kind and version of the terraform that planned
	Plan     string    `json:"plan"`      // sha256 of the plan file
	Args     string    `json:"args"`      // sha256 of the unit's plan arguments and Env
	Inputs   string    `json:"inputs"`    // unitRun.planInputs: workspace, file contents, TF_VAR_*, TF_CLI_ARGS, TF_CLI_ARGS_plan, TF_CLI_ARGS_init
	Destroy  bool      `json:"destroy"`
	Created  time.Time `json:"created"`
	// Parts are Digest, Args and Inputs per named input (planParts), so
	// a stale plan's error names the inputs that changed. A record of an
	// older version has none (and a bundle of one: omitempty keeps its
	// manifest's digest).
	Parts map[string]string `json:"parts,omitempty"`
	// Workspace is the workspace the plan was made in (a name, never a
	// secret), so a plan refused for another names both.
	Workspace string `json:"workspace,omitempty"`
	// Files are the files the plan's workdir materialized from the
	// component's source (workdir.Workdir.SourceFiles: path from the
	// component to a digest of content and mode), so a plan refused for
	// changed component files names them. None where the workdir could
	// not say (a home an older release built, until its next Prepare).
	Files map[string]string `json:"files,omitempty"`
}

func (x *unitRun) applyingPath() string {
	return filepath.Join(x.w.DataDir, planDirName, planApplyingName)
}

func (x *unitRun) planPaths() (dir, file, jsonFile, meta string) {
	dir = filepath.Join(x.w.DataDir, planDirName)
	return dir, filepath.Join(dir, planFileName), filepath.Join(dir, planJSONName), filepath.Join(dir, planMetaName)
}

// redactedPath is the saved plan's JSON with sensitive values redacted.
func (x *unitRun) redactedPath() string {
	return filepath.Join(x.w.DataDir, planDirName, planRedactedName)
}

// SensitiveMarker replaces every sensitive value in the redacted
// rendering of a saved plan (PlanSummary.RedactedJSONFile), as terraform's
// own human-readable plan shows it.
const SensitiveMarker = "(sensitive value)"

// writeRedacted writes the redacted rendering of the saved plan's JSON
// doc beside it. The raw rendering holds sensitive values in clear and is
// the owner's only (0600); the redacted one is for sharing (a PR comment,
// a CI artifact): 0644, in the same 0700 dir.
func (x *unitRun) writeRedacted(doc []byte) error {
	redacted, err := redact.PlanJSON(doc, SensitiveMarker)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(x.redactedPath(), redacted, atomicfile.Record); err != nil {
		return fmt.Errorf("write %s: %w", x.redactedPath(), err)
	}
	return nil
}

// savePlan plans into the saved plan file, renders it as JSON and
// records what it was made from. The old record goes first, so a failed
// plan leaves nothing ApplyPlan would take.
func (x *unitRun) savePlan(ctx context.Context, destroy bool) (out stepOutcome, err error) {
	dir, file, jsonFile, metaFile := x.planPaths()
	for _, old := range []string{metaFile, x.applyingPath(), x.redactedPath()} {
		if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("remove old saved plan: %w", err)
		}
	}
	if err := atomicfile.MkdirPrivate(dir); err != nil {
		return out, fmt.Errorf("saved plan dir: %w", err)
	}
	tmp := file + ".tmp"
	defer os.Remove(tmp)
	r, err := x.run(ctx, PhasePlan, "plan", func(lt string) tfcmd.Cmd { return x.u.Args.planCmd(lt, destroy, tmp) })
	if err != nil {
		return out, err
	}
	out.hasChanges, out.summary = r.ExitCode == 2, summary(r)
	// The plan holds sensitive values as terraform renders them.
	if err := os.Chmod(tmp, 0o600); err != nil {
		return out, fmt.Errorf("keep saved plan: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return out, fmt.Errorf("keep saved plan: %w", err)
	}
	show, err := x.tf.Run(ctx, x.u.Args.showPlanCmd(file))
	if err != nil {
		return out, err
	}
	sum, err := summarizePlan(show.Stdout)
	if err != nil {
		return out, err
	}
	if err := atomicfile.WriteFile(jsonFile, show.Stdout, atomicfile.Record); err != nil {
		return out, fmt.Errorf("write %s: %w", jsonFile, err)
	}
	if err := x.writeRedacted(show.Stdout); err != nil {
		return out, err
	}
	sum.File, sum.JSONFile, sum.RedactedJSONFile, sum.DestroyPlan = file, jsonFile, x.redactedPath(), destroy
	out.plan = sum
	m, err := x.planMeta(file, destroy)
	if err != nil {
		return out, err
	}
	m.Files = x.w.SourceFiles()
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := atomicfile.WriteFile(metaFile, b, atomicfile.Record); err != nil {
		return out, fmt.Errorf("write %s: %w", metaFile, err)
	}
	x.out.note(fmt.Sprintf("plan saved: %d to add, %d to change, %d to destroy, %d to import", sum.Add, sum.Change, sum.Destroy, sum.Import))
	return out, nil
}

func (x *unitRun) planMeta(file string, destroy bool) (planMeta, error) {
	m := x.planMade()
	m.Version, m.Destroy, m.Created = planMetaVersion, destroy, time.Now().UTC()
	var err error
	if m.Plan, err = treesum.HashFile(file); err != nil {
		return m, fmt.Errorf("hash saved plan: %w", err)
	}
	m.LockFile, err = treesum.HashFile(filepath.Join(x.dir, lockFileName))
	if errors.Is(err, os.ErrNotExist) {
		m.LockFile, err = "", nil
	}
	return m, err
}

// planMade is what a plan made now would be made from: the workdir's
// digest, the engine, the arguments and the inputs, with their parts.
func (x *unitRun) planMade() planMeta {
	p := fingerprint.Parts{}
	// The workdir's digest, per part: what the source decides, and each
	// generated file (the names the spec gives them).
	p.Add(componentFilesPart, []byte(x.w.SourceDigest))
	for name, data := range x.generated {
		p.Add("generated file "+name, data)
	}
	return planMeta{Version: planMetaVersion, Digest: x.w.Digest, Engine: fingerprint.EngineID(x.rs.eng),
		Args: planArgsDigest(x.u, p), Inputs: x.planInputs(p), Parts: p.Sums(), Workspace: x.workspaceName()}
}

// staleAgainst is staleness of the record saved against now, a record of
// this unit made now, with now's files read (workdir.Workdir.SourceFiles)
// only where the component's files changed, so that the error names
// them: an unchanged plan costs no read of them. A record of a newer
// version than this release reads is refused by name.
func (x *unitRun) staleAgainst(saved, now planMeta, wantDestroy bool) string {
	if saved.Version > planMetaVersion {
		return fmt.Sprintf("its record was written by a newer release (version %d; this one reads up to %d)", saved.Version, planMetaVersion)
	}
	if saved.Files != nil && saved.Parts[componentFilesPart] != now.Parts[componentFilesPart] {
		now.Files = x.w.SourceFiles()
	}
	return staleness(saved, now, wantDestroy)
}

// checkSavedPlan refuses a saved plan that is missing or stale. The
// pipeline calls it before anything else runs for the unit (modules,
// providers, init), so that a refused plan changes nothing in the
// workdir, with checkLock false: the lock file is compared once the
// providers step has written it, right before the apply.
func (x *unitRun) checkSavedPlan(destroy, checkLock bool) (planMeta, error) {
	_, file, _, _ := x.planPaths()
	saved, err := x.savedPlanMeta()
	if err != nil {
		return planMeta{}, err
	}
	now, err := x.planMeta(file, saved.Destroy)
	if errors.Is(err, os.ErrNotExist) {
		return planMeta{}, fmt.Errorf("%w: the plan file %s is gone", ErrNoPlan, file)
	}
	if err != nil {
		return planMeta{}, err
	}
	if !checkLock {
		now.LockFile = saved.LockFile
	}
	if why := x.staleAgainst(saved, now, destroy); why != "" {
		return planMeta{}, fmt.Errorf("%w: %s; run SavePlan again", ErrStalePlan, why)
	}
	if b, err := atomicfile.ReadFile(x.applyingPath(), atomicfile.Record); err == nil {
		if _, err := format.Read(x.applyingPath(), b, applyingVersion); errors.Is(err, ErrNewerFormat) {
			return planMeta{}, err
		}
		var a planApplying
		if json.Unmarshal(b, &a) != nil || a.Plan == saved.Plan {
			return planMeta{}, fmt.Errorf("%w: an earlier apply of this plan (pid %d on %s, started %s) never finished "+
				"and may have changed infrastructure; applying it again could do the same changes twice: run SavePlan again",
				ErrStalePlan, a.PID, a.Host, a.Started.Format(time.RFC3339))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return planMeta{}, fmt.Errorf("read %s: %w", x.applyingPath(), err)
	}
	return saved, nil
}

// savedPlanMeta reads the saved plan's record: ErrNoPlan when there is
// none, ErrNewerFormat when a newer release made it (left as it is).
func (x *unitRun) savedPlanMeta() (planMeta, error) {
	_, _, _, metaFile := x.planPaths()
	var saved planMeta
	found, err := readRecord(metaFile, planMetaVersion, &saved)
	switch {
	case errors.Is(err, ErrNewerFormat):
		return planMeta{}, fmt.Errorf("the saved plan: %w", err)
	case !found && err == nil:
		return planMeta{}, fmt.Errorf("%w: run SavePlan first (%s)", ErrNoPlan, metaFile)
	case !found:
		return planMeta{}, err
	case err != nil:
		return planMeta{}, fmt.Errorf("%w: unreadable record %s: %w", ErrStalePlan, metaFile, err)
	}
	return saved, nil
}

// applyPlan applies the unit's saved plan exactly, or refuses it.
func (x *unitRun) applyPlan(ctx context.Context, destroy bool) (out stepOutcome, err error) {
	_, file, jsonFile, metaFile := x.planPaths()
	saved, err := x.checkSavedPlan(destroy, true)
	if err != nil {
		return out, err
	}
	if js, err := os.ReadFile(jsonFile); err == nil {
		if sum, err := summarizePlan(js); err == nil {
			sum.File, sum.JSONFile, sum.DestroyPlan = file, jsonFile, saved.Destroy
			if exists(x.redactedPath()) {
				sum.RedactedJSONFile = x.redactedPath()
			}
			out.plan = sum
		}
	}
	host, _ := os.Hostname()
	mark, _ := json.Marshal(planApplying{Version: applyingVersion, Plan: saved.Plan, PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	if err := atomicfile.WriteFile(x.applyingPath(), mark, atomicfile.Record); err != nil {
		return out, fmt.Errorf("record the apply of the saved plan: %w", err)
	}
	r, err := x.run(ctx, PhaseApply, "apply", func(lt string) tfcmd.Cmd { return x.u.Args.applyPlanCmd(lt, file) })
	if err != nil {
		if !retry.MayHaveChanged(err) {
			// Nothing was changed (a lock, the backend, a refusal): the
			// plan may be applied again.
			_ = os.Remove(x.applyingPath())
		}
		if strings.Contains(err.Error(), staleSavedPlan) {
			// The state moved on since the plan was made: it was applied
			// already (here, or from a bundle on another machine), or
			// something else changed the state.
			return out, fmt.Errorf("%w: the state changed since the plan was made (already applied, here or on another machine?); run SavePlan again: %w", ErrStalePlan, err)
		}
		return out, x.keepErroredState(err)
	}
	// A saved plan is spent once applied: terraform would refuse it as
	// stale, and ApplyPlan must not find it again.
	if err := errors.Join(os.Remove(metaFile), os.Remove(file), os.Remove(x.applyingPath())); err != nil {
		x.out.note("cannot remove the applied plan: " + err.Error())
	}
	did := changesOf(r)
	out.summary, out.hasChanges = did.summary, did.hasChanges
	out.outputs, err = x.keepOutputs(ctx, r.Outputs)
	return out, err
}

// staleSavedPlan is the summary of terraform's (and OpenTofu's) refusal
// of a saved plan whose state has changed since it was made.
const staleSavedPlan = "Saved plan is stale"

// staleness says what changed between a saved plan's record and now, ""
// when nothing did: the inputs that differ, by name
// (fingerprint.ChangedParts), never their values. A record of an older version names no inputs: it
// says which of its digests differ.
func staleness(saved, now planMeta, wantDestroy bool) string {
	var why []string
	if saved.Destroy != wantDestroy {
		if saved.Destroy {
			why = append(why, "it is a destroy plan (apply it with ApplyDestroyPlan)")
		} else {
			why = append(why, "it is not a destroy plan (apply it with ApplyPlan)")
		}
	}
	if saved.Plan != now.Plan {
		why = append(why, "the plan file changed")
	}
	var changed []string
	if saved.Engine != now.Engine {
		changed = append(changed, fmt.Sprintf("engine version (%s, now %s)", saved.Engine, now.Engine))
	}
	if saved.LockFile != now.LockFile {
		changed = append(changed, "lock file")
	}
	var digests []string // the digests that differ, for a record that cannot say more
	if saved.Digest != now.Digest {
		digests = append(digests, "the component's files or generated files")
	}
	if saved.Args != now.Args {
		digests = append(digests, "the unit's arguments or environment")
	}
	if saved.Inputs != now.Inputs {
		digests = append(digests, "the workspace, var or -backend-config files, or TF_VAR_*/TF_CLI_ARGS*")
	}
	at := saved.Created.Format(time.RFC3339)
	if len(digests) > 0 {
		names := fingerprint.ChangedParts(saved.Parts, now.Parts)
		switch {
		case saved.Parts == nil:
			why = append(why, fmt.Sprintf("%s changed since a record of an older version (saved at %s, naming no input)", strings.Join(digests, "; "), at))
		case len(names) == 0:
			changed = append(changed, digests...) // no part tells: never say nothing
		default:
			for _, n := range names {
				changed = append(changed, partChange(n, saved, now))
			}
		}
	}
	if len(changed) > 0 {
		why = append(why, fmt.Sprintf("%s changed since it was saved at %s", strings.Join(changed, ", "), at))
	}
	return strings.Join(why, "; ")
}

// partChange is how staleness names the changed part n: by its name, but
// the component's files, which also say which files (when both records
// list them), and the workspace, which also says which ones (when the
// record names it).
func partChange(n string, saved, now planMeta) string {
	switch {
	case n == componentFilesPart && saved.Files != nil && now.Files != nil:
		if files := fingerprint.ChangedFiles(saved.Files, now.Files); files != "" {
			return n + " (" + files + ")"
		}
	case n == workspacePart && saved.Workspace != "" && now.Workspace != "":
		return fmt.Sprintf("%s (%q, now %q)", n, saved.Workspace, now.Workspace)
	}
	return n
}

// planArgsDigest covers what a unit gives terraform's plan besides the
// workdir: its plan arguments (variables, var files, targets,
// replacements, refresh; not -out or the lock timeout, which change from
// run to run) and its Env, but for what cannot change the plan
// (planReadsEnv: TF_CLI_ARGS_apply and the like). Each argument's part
// goes to p under its flag ("argument -target"), a -var under its
// variable's name ("-var region"): never a value.
func planArgsDigest(u *Unit, p fingerprint.Parts) string {
	fp := fingerprint.NewWithParts(p)
	args := u.Args.planCmd("", false, "").Args
	for i, a := range args {
		switch {
		case a == "-var":
			fp.AddString("arg", a) // its NAME=VALUE names it
		case i > 0 && args[i-1] == "-var":
			name, _, _ := strings.Cut(a, "=")
			fp.AddPart("arg", "-var "+name, []byte(a))
		default:
			flag, _, _ := strings.Cut(a, "=")
			fp.AddPart("arg", "argument "+flag, []byte(a))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(u.Env)) {
		if planReadsEnv(k) {
			fp.AddPart("env "+k, fingerprint.EnvLabel(k), []byte(u.Env[k]))
		}
	}
	return fp.Sum()
}

// summarizePlan counts a plan's changes the way terraform's summary line
// does and lists every resource with an action.
func summarizePlan(doc []byte) (*PlanSummary, error) {
	p, err := tfcmd.ParsePlan(doc)
	if err != nil {
		return nil, err
	}
	s := &PlanSummary{Changes: []ResourceChange{}}
	for _, rc := range p.ResourceChanges {
		acts := rc.Change.Actions
		importing := rc.Imported()
		if importing {
			s.Import++
		}
		switch {
		case slices.Equal(acts, []string{"create"}):
			s.Add++
		case slices.Equal(acts, []string{"update"}):
			s.Change++
		case slices.Equal(acts, []string{"delete"}):
			s.Destroy++
		case slices.Contains(acts, "create") && slices.Contains(acts, "delete"):
			s.Add++
			s.Destroy++
		case !importing:
			continue // no-op or read: not a change
		}
		s.Changes = append(s.Changes, ResourceChange{Address: rc.Address, Actions: acts, Importing: importing})
	}
	for _, oc := range p.OutputChanges {
		if !slices.Equal(oc.Change.Actions, []string{"no-op"}) {
			s.OutputChanges = true
		}
	}
	slices.SortFunc(s.Changes, func(a, b ResourceChange) int { return strings.Compare(a.Address, b.Address) })
	return s, nil
}
