package runner

import (
	"maps"
	"os"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// unitEnv is the environment of a unit's terraform: the process
// environment, the workdir's variables (TF_DATA_DIR) and, with a plugin
// cache, TF_CLI_CONFIG_FILE. tfexec.SetEnv refuses the variables it
// manages itself (TF_WORKSPACE, TF_LOG*, TF_CLI_ARGS*, TF_INPUT, TF_VAR_*,
// ...), so those are dropped: pass variables in generated tfvars files.
// TF_PLUGIN_CACHE_DIR is dropped too: terraform's own cache writes are not
// safe when runs overlap.
func unitEnv(wd map[string]string, cliConfig string) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	maps.Copy(env, wd)
	if cliConfig != "" {
		env["TF_CLI_CONFIG_FILE"] = cliConfig
	}
	delete(env, "TF_PLUGIN_CACHE_DIR")
	for _, k := range tfexec.ProhibitedEnv(env) {
		delete(env, k)
	}
	if _, ok := env["CHECKPOINT_DISABLE"]; !ok {
		env["CHECKPOINT_DISABLE"] = "1" // no version check calls from every unit
	}
	return env
}
