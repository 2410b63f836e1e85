package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
)

// fullArgs is an Args with every field set.
func fullArgs() Args {
	return Args{
		Vars:          map[string]string{"b": "2", "a": "1"},
		VarFiles:      []string{"x.tfvars.json"},
		Targets:       []string{"tfitest_item.a", "module.m"},
		Replace:       []string{"tfitest_item.b"},
		Refresh:       ptr(false),
		Parallelism:   4,
		Lock:          ptr(true),
		BackendConfig: []string{"path=/x"},
		Reconfigure:   true,
		MigrateState:  true,
		Upgrade:       true,
	}
}

// TestArgsReachTheirCommands: each field of Args goes to the commands
// that take it and to no other (the lists themselves are tfcmd's tests).
func TestArgsReachTheirCommands(t *testing.T) {
	a := fullArgs()
	require.Equal(t, []string{"init", "-input=false", "-no-color", "-backend-config=path=/x", "-migrate-state", "-force-copy", "-upgrade"}, a.initCmd(true).Args)
	require.Equal(t, []string{"init", "-input=false", "-no-color", "-backend-config=path=/x", "-reconfigure", "-upgrade"}, a.initCmd(false).Args)
	vars := []string{"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2"}
	change := append([]string{"-input=false", "-lock-timeout=0ms", "-lock=true", "-refresh=false", "-parallelism=4",
		"-target=tfitest_item.a", "-target=module.m"}, vars...)
	require.Equal(t, append(append([]string{"plan", "-json", "-detailed-exitcode"}, change...), "-replace=tfitest_item.b", "-destroy", "-out=p"), a.planCmd("0ms", true, "p").Args)
	require.Equal(t, append(append([]string{"apply", "-auto-approve", "-json"}, change...), "-replace=tfitest_item.b"), a.applyCmd("0ms").Args)
	require.Equal(t, append([]string{"destroy", "-auto-approve", "-json"}, change...), a.destroyCmd("0ms").Args)
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms", "-lock=true", "-parallelism=4", "/p"}, a.applyPlanCmd("0ms", "/p").Args)
	// Plan arguments reach init, get and workspace select only where the
	// engine evaluates variables early.
	require.Empty(t, a.earlyVars(a.early.Init).Args())
	require.Equal(t, []string{"validate", "-no-color"}, a.validateCmd().Args)
	require.Equal(t, []string{"show", "-json", "-no-color", "/p"}, a.showPlanCmd("/p").Args)
	a.early = earlyeval.Rules{Init: true, Inspect: true}
	require.Equal(t, vars, a.earlyVars(a.early.Init).Args())
	require.Equal(t, append([]string{"init", "-input=false", "-no-color", "-backend-config=path=/x", "-reconfigure", "-upgrade"}, vars...), a.initCmd(false).Args)
	require.Equal(t, append([]string{"validate", "-no-color"}, vars...), a.validateCmd().Args)
	require.Equal(t, append(append([]string{"show", "-json", "-no-color"}, vars...), "/p"), a.showPlanCmd("/p").Args)
}

func TestCheckArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    Args
		wantErr string // "" means valid
	}{
		{"zero", Args{}, ""},
		{"everything valid", fullArgs(), ""},
		{"empty var value is fine", Args{Vars: map[string]string{"a": ""}}, ""},
		{"empty var name", Args{Vars: map[string]string{"": "x"}}, "empty name"},
		// terraform splits -var at the first "=": the name "a=b" would
		// silently set variable a to "b=v".
		{"var name with =", Args{Vars: map[string]string{"a=b": "v"}}, "a=b"},
		{"empty var file", Args{VarFiles: []string{"ok.tfvars", ""}}, "-var-file"},
		{"var file that is the dir itself", Args{VarFiles: []string{"./"}}, "-var-file"},
		{"empty target", Args{Targets: []string{"a.b", ""}}, "-target"},
		{"empty replace", Args{Replace: []string{""}}, "-replace"},
		{"empty backend config", Args{BackendConfig: []string{""}}, "-backend-config"},
		{"negative parallelism", Args{Parallelism: -1}, "-parallelism"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkArgs("plat-ue2-dev/elasticache/redis-cluster-1", tt.args)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidUnit)
			require.ErrorContains(t, err, "plat-ue2-dev/elasticache/redis-cluster-1", "the error names the unit")
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// varsComponent echoes its variables as outputs; it needs no provider.
const varsComponent = `
variable "name" { type = string }
variable "size" {
  type    = string
  default = "small"
}
output "name" { value = var.name }
output "size" { value = var.size }
`

// TestVarFilesReachTerraform passes a generated var file with an atmos
// style name (terraform never loads it by itself) and an absolute one
// given later, which wins where both set a variable.
func TestVarFilesReachTerraform(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "elasticache", varsComponent)
	const atmosName = "plat-ue2-dev-elasticache.terraform.tfvars.json"
	abs := filepath.Join(t.TempDir(), "size.tfvars.json")
	require.NoError(t, os.WriteFile(abs, []byte(`{"size":"xlarge"}`), 0o644))
	spec := workdirSpec("plat-ue2-dev", "elasticache/redis-cluster-1", src,
		map[string][]byte{atmosName: []byte(`{"name":"redis-cluster-1","size":"large"}`)})
	r := w.runner(t)

	// Without VarFiles the file is not read: the required variable is missing.
	rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: spec})
	require.Error(t, err)
	require.Equal(t, Failed, rep.Results[0].Status)
	require.ErrorContains(t, err, "No value for required variable")

	rep, err = r.Run(testCtx(t), Apply, Unit{Workdir: spec, Args: Args{VarFiles: []string{atmosName}}})
	require.NoError(t, err)
	require.Equal(t, "redis-cluster-1", outputString(t, rep.Results[0], "name"))
	require.Equal(t, "large", outputString(t, rep.Results[0], "size"))

	rep, err = r.Run(testCtx(t), Apply, Unit{Workdir: spec, Args: Args{VarFiles: []string{atmosName, abs}}})
	require.NoError(t, err)
	require.Equal(t, "redis-cluster-1", outputString(t, rep.Results[0], "name"))
	require.Equal(t, "xlarge", outputString(t, rep.Results[0], "size"), "the later var file wins")
}

// pairComponent manages two independent resources whose ids are random
// UUIDs, new at every create.
const pairComponent = `
resource "terraform_data" "a" { input = "a" }
resource "terraform_data" "b" { input = "b" }
`

// TestTargetsAndReplace: -target applies only the targeted resource;
// -replace recreates only the replaced one.
func TestTargetsAndReplace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "pair", pairComponent)
	state := filepath.Join(w.dir, "states", "pair.tfstate")
	spec := workdirSpec("plat-ue2-dev", "pair", src, files(t, map[string]any{}, state))
	r := w.runner(t)

	_, err := r.Run(testCtx(t), Apply, Unit{Workdir: spec, Args: Args{Targets: []string{"terraform_data.a"}}})
	require.NoError(t, err)
	res := stateResources(t, state)
	require.Contains(t, res, "terraform_data.a")
	require.NotContains(t, res, "terraform_data.b", "-target applied an untargeted resource")

	_, err = r.Run(testCtx(t), Apply, Unit{Workdir: spec})
	require.NoError(t, err)
	before := stateResources(t, state)
	require.Len(t, before, 2)
	require.Equal(t, res["terraform_data.a"]["id"], before["terraform_data.a"]["id"], "a was not touched by the full apply")

	rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: spec, Args: Args{Replace: []string{"terraform_data.a"}}})
	require.NoError(t, err)
	after := stateResources(t, state)
	require.NotEqual(t, before["terraform_data.a"]["id"], after["terraform_data.a"]["id"], "a was not replaced")
	require.Equal(t, before["terraform_data.b"]["id"], after["terraform_data.b"]["id"], "b was replaced too")
	log := readFile(t, rep.Results[0].Log)
	require.Contains(t, log, "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.")
}
