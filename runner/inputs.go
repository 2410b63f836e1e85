package runner

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/fingerprint"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// inputFiles returns the files outside the root module's configuration
// that the runner itself reads for a unit (its var files and
// -backend-config files), as given and resolved against dir.
func inputFiles(dir string, a Args) (given, paths []string) {
	add := func(f string) {
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		given, paths = append(given, f), append(paths, p)
	}
	for _, f := range a.VarFiles {
		add(f)
	}
	for _, bc := range a.BackendConfig {
		// KEY=VALUE, unless a file of that name exists (as terraform reads it).
		p := bc
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Lstat(p); err == nil || !strings.Contains(bc, "=") {
			add(bc)
		}
	}
	return given, paths
}

// checkInputFiles refuses, before anything reads them, var files and
// -backend-config files that exist but are not regular files: a FIFO
// would block every read of it (the runner's digests, terraform itself)
// with no end. A missing file is left to terraform to report.
func (x *unitRun) checkInputFiles() error {
	given, paths := inputFiles(x.dir, x.u.Args)
	for i, p := range paths {
		fi, err := os.Stat(p) // never opens: a FIFO cannot block it
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: unit %s: input file %s: %w", ErrInvalidUnit, x.id, given[i], err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: unit %s: input file %s (%s) is not a regular file (%s)", ErrInvalidUnit, x.id, given[i], p, fi.Mode().Type())
		}
	}
	return nil
}

// readInput reads one of the unit's input files: regular files only
// (see modtree.ReadRegular), so a file swapped for a FIFO after
// checkInputFiles still never blocks.
func readInput(p string) ([]byte, error) { return modtree.ReadRegular(p) }

// externalInputs hashes what terraform reads for a unit besides the
// workdir's files and the arguments themselves: the workspace ("" is
// "default"), the content of every var file and -backend-config file
// (those outside the workdir are not in its digest; the -backend-config
// values too), and the environment terraform reads (TF_VAR_*,
// TF_CLI_ARGS*, and the unit's own Env over the process's). A unit is
// not skipped as unchanged when it differs (the applied record: an
// apply reads every command's TF_CLI_ARGS* it runs, TF_CLI_ARGS_apply
// included).
func (x *unitRun) externalInputs() string {
	return x.inputsFingerprint(func(string) bool { return true }, nil)
}

// planInputs is externalInputs for a saved plan's record: what the plan
// was made from, without the TF_CLI_ARGS_<command> of the commands that
// run after it (planReadsEnv). A saved plan, or a bundle, is refused as
// stale when it differs; an apply job's own TF_CLI_ARGS_apply is not a
// reason. Each input's part goes to p.
func (x *unitRun) planInputs(p fingerprint.Parts) string { return x.inputsFingerprint(planReadsEnv, p) }

// planReadsEnv reports whether the environment variable k can change
// what a saved plan holds: all but TF_CLI_ARGS_<command> of commands
// other than plan and the init it was planned after (init's
// -backend-config decides which state the plan compared against).
// TF_CLI_ARGS_apply, say, changes how the plan is applied, never what
// it holds: terraform reads a saved plan's variables and backend from
// the plan file itself.
func planReadsEnv(k string) bool {
	cmd, ok := strings.CutPrefix(k, "TF_CLI_ARGS_")
	return !ok || cmd == "plan" || cmd == "init"
}

// inputsFingerprint is externalInputs over the environment variables
// for which counts returns true, with each input's part in p (nil: none
// kept). A -backend-config KEY=VALUE is named by its key alone: the
// value may be a secret.
func (x *unitRun) inputsFingerprint(counts func(string) bool, p fingerprint.Parts) string {
	fp := fingerprint.NewWithParts(p)
	fp.AddPart("workspace", workspacePart, []byte(x.workspaceName()))
	for _, bc := range x.u.Args.BackendConfig {
		label := fmt.Sprintf("-backend-config %q", bc) // a file's path
		if k, _, ok := strings.Cut(bc, "="); ok {
			label = "-backend-config " + k
		}
		fp.AddPart("backend-config", label, []byte(bc))
	}
	given, paths := inputFiles(x.dir, x.u.Args)
	for i, p := range paths {
		b, err := readInput(p)
		if err != nil {
			b = []byte("unreadable: " + err.Error())
		}
		// inputFiles lists the var files first.
		label := fmt.Sprintf("var file %q", given[i])
		if i >= len(x.u.Args.VarFiles) {
			label = fmt.Sprintf("-backend-config file %q", given[i])
		}
		fp.AddPart("file "+given[i], label, b)
	}
	env := unitEnv(processEnv(), nil, "", x.u.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !counts(k) {
			continue
		}
		if strings.HasPrefix(k, "TF_VAR_") || strings.HasPrefix(k, "TF_CLI_ARGS") || x.u.Env[k] != "" {
			fp.AddPart("env "+k, fingerprint.EnvLabel(k), []byte(env[k]))
		}
	}
	return fp.Sum()
}
