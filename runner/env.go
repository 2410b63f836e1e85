package runner

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// unitEnv is the environment of a unit's terraform, built the way plain
// terraform would see it in a shell: the process environment
// (TF_VAR_*, TF_LOG*, TF_CLI_ARGS*, credentials and TF_TOKEN_* all pass
// through, so terraform applies its own precedence), then the workdir's
// variables (TF_DATA_DIR), and the unit's own Env last; with a plugin
// cache TF_CLI_CONFIG_FILE is the runner's CLI config, into which the
// user's own (the one the unit's environment names, or the default files)
// is merged. Two variables are dropped from the
// process environment: TF_PLUGIN_CACHE_DIR, whose writes are not safe
// when runs overlap (the shared cache replaces it), and TF_WORKSPACE,
// which would override Unit.Workspace for every unit at once.
func unitEnv(process []string, wd map[string]string, cliConfig string, own map[string]string) map[string]string {
	env := map[string]string{}
	for _, kv := range process {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	delete(env, "TF_PLUGIN_CACHE_DIR")
	delete(env, "TF_WORKSPACE")
	maps.Copy(env, wd)
	if cliConfig != "" {
		env["TF_CLI_CONFIG_FILE"] = cliConfig
	}
	for k, v := range map[string]string{
		"CHECKPOINT_DISABLE": "1", // no version check call from every unit
		"TF_IN_AUTOMATION":   "1", // no "run terraform apply next" advice in the logs
	} {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	maps.Copy(env, own)
	if cliConfig != "" {
		// A unit's own TF_CLI_CONFIG_FILE was read and merged into it.
		env["TF_CLI_CONFIG_FILE"] = cliConfig
	}
	return env
}

// processEnv is the runner's own environment, read once per unit.
func processEnv() []string { return os.Environ() }

// tfexecEnv is env as terraform-exec accepts it: without the variables it
// manages itself (TF_VAR_*, TF_LOG*, TF_CLI_ARGS*, TF_INPUT, TF_WORKSPACE,
// ...). It applies TF_LOG and TF_LOG_PATH through terraform-exec's own log
// settings instead.
func tfexecEnv(tf *tfexec.Terraform, env map[string]string) error {
	clean := tfexec.CleanEnv(maps.Clone(env))
	if err := tf.SetEnv(clean); err != nil {
		return err
	}
	if p := env["TF_LOG_PATH"]; p != "" {
		if err := tf.SetLogPath(p); err != nil {
			return err
		}
		if l := env["TF_LOG"]; l != "" {
			return tf.SetLog(l)
		}
	}
	return nil
}

// splitLogPath gives the unit its own terraform debug log when the
// process environment names one TF_LOG_PATH for every unit (their logs
// would interleave in one file): PATH becomes PATH's directory and name
// with the unit's part of a log name (see unitFileName) added before the extension,
// e.g. /tmp/tf.log -> /tmp/tf.plat-ue2-dev_app-1a2b3c4d5e6f.log. A
// TF_LOG_PATH in the unit's own Env is the unit's already and is kept.
// The file is created 0600 first (terraform appends to it): with TF_LOG
// set, its "CLI args" line holds every -var, secrets included.
func splitLogPath(env, own map[string]string, id string) {
	p := env["TF_LOG_PATH"]
	if p == "" || own["TF_LOG_PATH"] != "" {
		return
	}
	ext := filepath.Ext(p)
	unit := unitFileName(id)
	env["TF_LOG_PATH"] = strings.TrimSuffix(p, ext) + "." + unit + ext
	if f, err := os.OpenFile(env["TF_LOG_PATH"], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		f.Close()
	}
}

// checkEnv refuses a Unit.Env that would not reach terraform as the
// variables it names: an empty key (the process would get "=value"), a
// key with '=' (TF_CLI_CONFIG_FILE=x as a key would override the CLI
// config the runner forces) or NUL, and a value with NUL (the unit would
// fail at its first terraform, after its workdir was written). The error
// names the unit and the key, never the value.
func checkEnv(id string, env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		switch {
		case k == "":
			return fmt.Errorf("%w: unit %s: Env has an empty variable name", ErrInvalidUnit, id)
		case strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("%w: unit %s: Env variable name %q has '=' or NUL in it", ErrInvalidUnit, id, k)
		case strings.ContainsRune(env[k], 0):
			return fmt.Errorf("%w: unit %s: the value of Env variable %q has NUL in it", ErrInvalidUnit, id, k)
		}
	}
	return nil
}
