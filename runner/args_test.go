package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInitArgs(t *testing.T) {
	base := []string{"init", "-input=false", "-no-color"}
	tests := []struct {
		name        string
		args        Args
		reconfigure bool
		want        []string
	}{
		{"zero", Args{}, false, base},
		{"backend config in order", Args{BackendConfig: []string{"path=/s/a.tfstate", "backend.hcl"}}, false,
			append(base, "-backend-config=path=/s/a.tfstate", "-backend-config=backend.hcl")},
		{"caller reconfigure", Args{Reconfigure: true}, false, append(base, "-reconfigure")},
		{"changed backend reconfigures", Args{}, true, append(base, "-reconfigure")},
		{"changed backend with migrate-state migrates", Args{MigrateState: true}, true, append(base, "-migrate-state", "-force-copy")},
		{"migrate-state without a change adds nothing", Args{MigrateState: true}, false, base},
		{"upgrade", Args{Upgrade: true}, false, append(base, "-upgrade")},
		{"everything", Args{BackendConfig: []string{"key=x"}, Reconfigure: true, Upgrade: true}, false,
			append(base, "-backend-config=key=x", "-reconfigure", "-upgrade")},
		{"plan-only arguments are not init's", Args{Vars: map[string]string{"a": "1"}, VarFiles: []string{"x.tfvars"},
			Targets: []string{"a.b"}, Replace: []string{"a.b"}, Parallelism: 3, Refresh: ptr(false), Lock: ptr(false)}, false, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, initArgs(tt.args, tt.reconfigure))
		})
	}
}

func TestVarArgs(t *testing.T) {
	tests := []struct {
		name string
		args Args
		want []string
	}{
		{"none", Args{}, nil},
		{"vars sorted by name", Args{Vars: map[string]string{"zone": "b", "app": "x", "m": "1"}},
			[]string{"-var", "app=x", "-var", "m=1", "-var", "zone=b"}},
		{"values are kept whole", Args{Vars: map[string]string{"tags": `{"a"="b=c"}`, "empty": ""}},
			[]string{"-var", "empty=", "-var", `tags={"a"="b=c"}`}},
		{"var files in the given order", Args{VarFiles: []string{"z.tfvars", "/abs/a.tfvars.json", "plat-ue2-dev-elasticache.terraform.tfvars.json"}},
			[]string{"-var-file=z.tfvars", "-var-file=/abs/a.tfvars.json", "-var-file=plat-ue2-dev-elasticache.terraform.tfvars.json"}},
		{"vars then var files", Args{Vars: map[string]string{"b": "2", "a": "1"}, VarFiles: []string{"f.tfvars"}},
			[]string{"-var-file=f.tfvars", "-var", "a=1", "-var", "b=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, varArgs(tt.args))
		})
	}
}

// full is an Args with every field set.
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

func TestPlanArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    Args
		lt      string
		destroy bool
		out     string
		want    []string
	}{
		{"zero", Args{}, "0ms", false, "",
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=0ms"}},
		{"saved destroy plan", Args{}, "500ms", true, "/d/plan.tfplan",
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=500ms", "-destroy", "-out=/d/plan.tfplan"}},
		{"every argument", fullArgs(), "0ms", false, "p",
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=0ms",
				"-lock=true", "-refresh=false", "-parallelism=4",
				"-target=tfitest_item.a", "-target=module.m",
				"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2",
				"-replace=tfitest_item.b", "-out=p"}},
		{"refresh true and lock false", Args{Refresh: ptr(true), Lock: ptr(false)}, "1s", false, "",
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=1s", "-lock=false", "-refresh=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, planArgs(tt.args, tt.lt, tt.destroy, tt.out))
		})
	}
}

func TestApplyArgs(t *testing.T) {
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms"}, applyArgs(Args{}, "0ms"))
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=2s",
		"-lock=true", "-refresh=false", "-parallelism=4",
		"-target=tfitest_item.a", "-target=module.m",
		"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2",
		"-replace=tfitest_item.b"}, applyArgs(fullArgs(), "2s"))
}

// TestApplyPlanArgs: a saved plan carries its variables, targets,
// replacements and refresh mode; terraform refuses them beside it, so
// only what apply itself takes is passed, and the plan file comes last.
func TestApplyPlanArgs(t *testing.T) {
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms", "/d/plan.tfplan"},
		applyPlanArgs(Args{}, "0ms", "/d/plan.tfplan"))
	got := applyPlanArgs(fullArgs(), "0ms", "/d/plan.tfplan")
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms", "-lock=true", "-parallelism=4", "/d/plan.tfplan"}, got)
	for _, a := range got {
		for _, refused := range []string{"-var", "-target", "-replace", "-refresh", "-destroy", "-backend-config"} {
			require.False(t, strings.HasPrefix(a, refused), "%s passed with a saved plan", a)
		}
	}
}

func TestDestroyArgs(t *testing.T) {
	require.Equal(t, []string{"destroy", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms"}, destroyArgs(Args{}, "0ms"))
	got := destroyArgs(fullArgs(), "0ms")
	require.Equal(t, []string{"destroy", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms",
		"-lock=true", "-refresh=false", "-parallelism=4",
		"-target=tfitest_item.a", "-target=module.m",
		"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2"}, got)
	for _, a := range got {
		require.False(t, strings.HasPrefix(a, "-replace"), "destroy takes no -replace")
	}
}

func TestOtherCommandArgs(t *testing.T) {
	require.Equal(t, []string{"validate", "-no-color"}, validateArgs())
	require.Equal(t, []string{"output", "-json"}, outputArgs())
	require.Equal(t, []string{"show", "-json", "-no-color", "/p"}, showPlanArgs("/p"))
	require.Equal(t, []string{"workspace", "select", "-or-create=true", "--", "blue"}, workspaceArgs("blue", Args{}))
	require.Equal(t, []string{"force-unlock", "-force", "-no-color", "--", "abc-123"}, forceUnlockArgs("abc-123"))
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
