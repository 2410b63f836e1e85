package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// DryRunStep is what Run would do with one selected unit, as DryRun
// finds it without starting terraform.
type DryRunStep struct {
	// ID is the unit's ID.
	ID string
	// Wave is the unit's wave in Order: 0 for the first.
	Wave int
	// Unchanged is set, for Apply, when the unit's inputs are those of
	// its last successful apply: with WithSkipUnchanged, Run skips it.
	Unchanged bool
	// Skip is set when Run would skip the unit as unchanged
	// (WithSkipUnchanged): it starts no terraform at all, unless its
	// outputs feed a Generate in the same Run (Outputs).
	Skip bool
	// Outputs is set when the unit's outputs are read for a Generate in
	// the same Run (a skipped unit then still runs terraform output).
	Outputs bool
	// Init is set when Run would run terraform init for the unit, and
	// InitReason says why; both are empty when init would be skipped
	// (nothing it depends on changed since the last successful init) or
	// not reached (Skip without Outputs).
	Init       bool
	InitReason string
	// WaitsFor lists, sorted, the units whose outputs the unit's Generate
	// waits for (its DependsOn); none without a Generate.
	WaitsFor []string
	// Unknown says what the dry run could not decide, "" when it decided
	// everything above: a Generate that reads its dependencies' outputs
	// makes files that exist only once those outputs do, so whether the
	// unit is unchanged and whether its init runs wait for them too.
	Unknown string
}

// DryRun validates the units as Run does and says, for each selected
// unit in the order Run would take them (by wave, then by ID), whether
// it would be skipped as unchanged, whether init would run and why, and
// which dependency outputs it would wait for. It starts no terraform
// process: the engine is the one the Runner already detected (Binary,
// or an earlier Run); a Runner that has not yet detected it runs its
// version command once, as Binary does.
//
// It decides with the very checks Run makes: each unit's workdir is
// prepared as Run would first prepare it (the refresh Run would make;
// the instance lock is taken and released), its inputs compared with
// the record of its last successful apply, its init record with what
// init would depend on now. What Run would fetch first is taken as it
// stands: remote modules as the unit's data dir holds them, the provider
// lock file as the workdir holds it; a Run that fetches newer ones can
// decide otherwise. Nothing else is written: no log, journal or record.
func (r *Runner) DryRun(ctx context.Context, cmd Command, units []Unit, opts ...RunOption) ([]DryRunStep, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	if err := r.usable(); err != nil {
		return nil, err
	}
	rc, err := r.cfg.run.forCall(opts)
	if err != nil {
		return nil, err
	}
	rs, sel, err := r.startRun(ctx, cmd, units, &rc)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	rs.feeds = rs.feedsGenerate(sel)
	var steps []DryRunStep
	for wave, ids := range rs.g.Waves(sel, rc.policy(cmd)) {
		for _, id := range ids {
			i, _ := rs.g.Index(id)
			st, err := rs.dryRunUnit(ctx, i, wave)
			if err != nil {
				return nil, fmt.Errorf("dry run of unit %s: %w", id, err)
			}
			steps = append(steps, st)
		}
	}
	return steps, nil
}

// dryRunUnit is unit i's pass through the pipeline's decisions, with
// every step that would start terraform left out.
func (rs *runState) dryRunUnit(ctx context.Context, i, wave int) (st DryRunStep, err error) {
	u := &rs.units[i]
	x := &unitRun{rs: rs, idx: i, u: u, id: rs.g.ID(i)}
	x.out = newUnitOutput(x.id, nil, nil) // notes go nowhere
	st = DryRunStep{ID: x.id, Wave: wave, Outputs: rs.feeds[i]}
	spec := u.Workdir
	if u.Generate != nil {
		st.WaitsFor = slices.Sorted(slices.Values(u.DependsOn))
		if len(st.WaitsFor) > 0 {
			st.Unknown = "its Generate reads the outputs of " + strings.Join(st.WaitsFor, ", ") +
				": whether it is unchanged and whether init runs are known once they are"
			return st, nil
		}
		files, err := u.Generate(ctx, map[string]Result{})
		if err != nil {
			return st, fmt.Errorf("%w: %w", ErrGenerate, err)
		}
		spec.Files = maps.Clone(spec.Files)
		if spec.Files == nil {
			spec.Files = map[string][]byte{}
		}
		maps.Copy(spec.Files, files)
	}
	x.moduleSources(&spec)
	w, err := rs.cfg.workdirs.Prepare(ctx, spec)
	if err != nil {
		return st, err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	x.w, x.dir = w, w.Dir
	x.walk()
	if rs.cfg.cache != nil {
		if x.user, x.userDigest, err = x.userCLIConfig(); err != nil {
			return st, fmt.Errorf("read your CLI config: %w", err)
		}
	}
	manifest := ""
	if _, remote, err := x.remoteModules(); err != nil {
		return st, err
	} else if remote {
		manifest = filepath.Join(w.DataDir, modulesDir, manifestName) // as installed; Run may fetch newer
	}
	// The environment the init record depends on, as the pipeline sets it
	// (the runner's own CLI config counts by the cache's place, not its
	// path).
	x.env = unitEnv(processEnv(), w.Env(), "", u.Env)
	if rs.cmd.kind == kindApply {
		if st.Unchanged, err = x.unchanged(x.inputsDigest()); err != nil {
			return st, err
		}
		st.Skip = st.Unchanged && rs.opts.skipUnchanged
		if st.Skip && !st.Outputs {
			return st, nil
		}
	}
	plan, err := x.planInit(manifest, rs.cmd.kind == kindInit)
	if err != nil {
		return st, err
	}
	st.Init, st.InitReason = plan.why != "", plan.why
	return st, nil
}
