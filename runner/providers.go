package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/providerreqs"
	"github.com/tfisolate/tfisolate/pluginc"
)

// lockFileName is the dependency lock file in a unit's workdir: the one
// providerreqs.Discover reads the component's pins from, and the one a
// provider-setup leader's lock file is written to.
const lockFileName = providerreqs.LockFileName

// setup is what a provider-setup leader produces for every unit with the
// same provider requirements.
type setup struct {
	lockFile []byte // .terraform.lock.hcl content
}

// providers discovers the unit's provider requirements (with the remote
// modules its manifest records, if any), gets the lock file from the
// singleflight leader for that requirement set and writes it into the
// workdir.
func (x *unitRun) providers(ctx context.Context, manifest string) (setup, error) {
	if err := x.tree.Err(); err != nil {
		// A configuration terraform rejects (a syntax error, a missing
		// local module): terraform init says why, naming the user's file
		// and line, as it does without a cache. Nothing is set up.
		x.out.note("providers: the configuration has errors; leaving them to terraform to report")
		return setup{}, nil
	}
	reqs, err := providerreqs.Discover(x.tree, providerreqs.Unit{
		Manifest: manifest,
		Host:     x.rs.eng.RegistryHost(),
		Upgrade:  x.u.Args.Upgrade,
		Files:    configRule(x.rs.eng.Kind),
		Grammar:  providerreqs.GrammarOf(x.rs.eng),
	})
	if err != nil {
		return setup{}, fmt.Errorf("discover providers: %w", err)
	}
	st, leader, err := x.rs.flights.Do(ctx, providerreqs.Key(reqs), x.id, func() (setup, error) {
		st, err := x.rs.setup(pluginc.WithFallback(ctx, x.fellBack), reqs)
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
		if !x.u.Args.Upgrade {
			if err := keepsLocked(filepath.Join(x.dir, lockFileName), st.lockFile); err != nil {
				return st, err
			}
		}
		if err := atomicfile.WriteFile(filepath.Join(x.dir, lockFileName), st.lockFile, 0o644); err != nil {
			return st, fmt.Errorf("write %s: %w", lockFileName, err)
		}
	}
	return st, nil
}

// keepsLocked refuses a lock file that would drop a hash the instance's
// lock file (seeded from the component's committed one) has for a
// provider at the same version. pluginc keeps every locked hash and adds
// only hashes it verified itself; this is the runner's own check that a
// committed hash is never replaced by a record's.
func keepsLocked(path string, next []byte) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	was, err := pluginc.ParseLockFile(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	now, err := pluginc.ParseLockFile(next)
	if err != nil {
		return err
	}
	for _, l := range was {
		for _, n := range now {
			if n.Provider != l.Provider || n.Version != l.Version {
				continue
			}
			for _, h := range l.Hashes {
				if !slices.Contains(n.Hashes, h) {
					return fmt.Errorf("%w: provider %s %s: the cache's hashes (%s) leave out %s, locked in %s: a locked hash is never replaced",
						ErrInit, l.Provider, l.Version, strings.Join(n.Hashes, ", "), h, path)
				}
			}
		}
	}
	return nil
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
	return st, nil
}

// fellBack reports a package the cache installed from its next source
// because one before it failed (a fleet's network mirror that is down):
// without it the cache's own logger, which discards by default, would be
// the only one told. The unit's log and output and an event say it for
// the unit whose setup installed it; the logger and Report.Warnings once
// per Run. Called from the cache's install goroutines.
func (x *unitRun) fellBack(fb pluginc.Fallback) {
	msg := "provider cache: " + fb.String()
	x.out.note(msg)
	x.rs.em.emit(Event{Unit: x.id, Phase: PhaseProviderFallback, Status: Running, Fallback: &fb})
	x.rs.warnMu.Lock()
	first := !x.rs.fallbacks[msg]
	if first {
		if x.rs.fallbacks == nil {
			x.rs.fallbacks = map[string]bool{}
		}
		x.rs.fallbacks[msg] = true
		x.rs.warnings = append(x.rs.warnings, msg)
	}
	x.rs.warnMu.Unlock()
	if first {
		x.rs.cfg.logger.Warn("provider source failed; installed from the next source", "unit", x.id,
			"package", fb.Package.String(), "source", fb.Source, "listing", fb.Listing, "err", fb.Err, "used", fb.Used)
	}
}

// lookupEnv reads a variable as the unit's terraform will see it: the
// unit's Env first, then the process environment.
func (x *unitRun) lookupEnv(k string) (string, bool) {
	if v, ok := x.u.Env[k]; ok {
		return v, true
	}
	return os.LookupEnv(k)
}

// userCLIConfig reads the CLI configuration the unit's terraform would
// read on its own (TF_CLI_CONFIG_FILE, ~/.terraformrc, the config dir's
// *.tfrc files, per the engine's rules), nil when there is none, and a
// digest of it for the init record.
func (x *unitRun) userCLIConfig() (*cliconfig.File, string, error) {
	e := x.rs.eng
	user, err := cliconfig.Find(string(e.Kind), e.RegistryHost(), x.lookupEnv)
	if err == nil {
		err = x.missingCLIConfig()
	}
	if err != nil {
		x.warnCLIConfig(err)
	}
	if user == nil {
		return nil, "", nil
	}
	b, err := json.Marshal(user)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return user, hex.EncodeToString(sum[:]), nil
}

// warnCLIConfig says once per Run that parts of the user's CLI config
// were left out, as terraform warns about a CLI config it cannot use and
// runs on with the rest: in the unit's log and output stream, in the
// logger, and in Report.Warnings.
func (x *unitRun) warnCLIConfig(err error) {
	x.rs.cliConfigWarning.Do(func() {
		msg := "your CLI config: " + err.Error() + "; going on without it, as terraform would"
		x.out.note(msg)
		x.rs.cfg.logger.Warn("parts of the CLI config are left out", "unit", x.id, "err", err)
		x.rs.warn(msg)
	})
}

// missingCLIConfig reports a TF_CLI_CONFIG_FILE (or TERRAFORM_CONFIG)
// that names no file, common in CI images. FindCLIConfig takes it as no
// config, as terraform does; but terraform warns about it, and with a
// plugin cache terraform is given the runner's config instead and never
// sees the missing name, so the runner warns.
func (x *unitRun) missingCLIConfig() error {
	for _, k := range []string{"TF_CLI_CONFIG_FILE", "TERRAFORM_CONFIG"} {
		p, _ := x.lookupEnv(k)
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s names %s, which does not exist", k, p)
		}
		return nil
	}
	return nil
}

// writeCLIConfig writes the CLI config the unit's terraform gets: the
// user's own settings (credentials, credentials helpers, hosts, ...) with
// the cache as the provider installation, as it is now (it lists the
// providers the cache holds, so write it after Ensure). The file is named
// by its content in the Run's private dir, so units with the same config
// share one.
func (x *unitRun) writeCLIConfig(user *cliconfig.File) (string, error) {
	data := x.rs.cfg.cache.CLIConfigFor(user)
	sum := sha256.Sum256(data)
	p := filepath.Join(x.rs.tmp, "cli-"+hex.EncodeToString(sum[:8])+".tfrc.json")
	if exists(p) {
		return p, nil
	}
	if err := atomicfile.WriteFile(p, data, 0o600); err != nil {
		return "", fmt.Errorf("write CLI config: %w", err)
	}
	return p, nil
}
