package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/pluginc"
)

// setup is what a provider-setup leader produces for every unit with the
// same provider requirements.
type setup struct {
	lockFile  []byte // .terraform.lock.hcl content
	cliConfig string // path of a terraform CLI config pointing at the cache
}

// providers discovers the unit's provider requirements (with the remote
// modules its manifest records, if any), gets the lock file from the
// singleflight leader for that requirement set and writes it into the
// workdir.
func (x *unitRun) providers(ctx context.Context, manifest string) (setup, error) {
	reqs, err := discover(x.tree, manifest, x.rs.eng.RegistryHost(), x.u.Args.Upgrade)
	if err != nil {
		return setup{}, fmt.Errorf("discover providers: %w", err)
	}
	st, leader, err := x.rs.flights.Do(ctx, requirementsKey(reqs), x.id, func() (setup, error) {
		st, err := x.rs.setup(ctx, reqs)
		if err != nil {
			return st, fmt.Errorf("%w: %w", ErrInit, err)
		}
		return st, nil
	})
	if errors.Is(err, pluginc.ErrLockedVersion) {
		return st, fmt.Errorf("%w. The pin is in %s, seeded from the component's own %s when it has one: fix or delete it there, or run with Args.Upgrade to choose versions again",
			err, filepath.Join(x.dir, lockFileName), lockFileName)
	}
	if err != nil {
		return st, err
	}
	if leader {
		x.out.note(fmt.Sprintf("providers: set up %d requirement(s) in the shared cache", len(reqs)))
	}
	if len(reqs) > 0 {
		if err := atomicfile.WriteFile(filepath.Join(x.dir, lockFileName), st.lockFile, 0o644); err != nil {
			return st, fmt.Errorf("write %s: %w", lockFileName, err)
		}
	}
	return st, nil
}

// setup is the leader's work for one requirement set.
func (rs *runState) setup(ctx context.Context, reqs []pluginc.Requirement) (setup, error) {
	var st setup
	if len(reqs) > 0 {
		pkgs, err := rs.cfg.cache.Ensure(ctx, reqs...)
		if err != nil {
			return st, err
		}
		st.lockFile = pluginc.LockFile(pkgs)
	}
	var err error
	st.cliConfig, err = rs.writeCLIConfig()
	return st, err
}

// writeCLIConfig writes the cache's terraform CLI config as it is now
// (it lists the providers the cache holds, so write it after Ensure) into
// the Run's private dir and returns its path.
func (rs *runState) writeCLIConfig() (string, error) {
	f, err := os.CreateTemp(rs.tmp, "cli-*.tfrc")
	if err != nil {
		return "", fmt.Errorf("write CLI config: %w", err)
	}
	_, werr := f.Write(rs.cfg.cache.CLIConfig())
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", fmt.Errorf("write CLI config: %w", err)
	}
	return f.Name(), nil
}
