package tfcmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// everyChange is a Change with every field set.
func everyChange(lockTimeout string) Change {
	return Change{LockTimeout: lockTimeout, Lock: ptr(true), Refresh: ptr(false), Parallelism: 4,
		Targets: []string{"tfitest_item.a", "module.m"},
		Vars:    Vars{Files: []string{"x.tfvars.json"}, Values: map[string]string{"b": "2", "a": "1"}}}
}

func TestInit(t *testing.T) {
	base := []string{"init", "-input=false", "-no-color"}
	vars := Vars{Files: []string{"v.tfvars"}, Values: map[string]string{"region": "eu"}}
	tests := []struct {
		name string
		o    InitOptions
		want []string
	}{
		{"zero", InitOptions{}, base},
		{"backend config in order", InitOptions{BackendConfig: []string{"path=/s/a.tfstate", "backend.hcl"}},
			append(base, "-backend-config=path=/s/a.tfstate", "-backend-config=backend.hcl")},
		{"caller reconfigure", InitOptions{Reconfigure: true}, append(base, "-reconfigure")},
		{"changed backend reconfigures", InitOptions{BackendChanged: true}, append(base, "-reconfigure")},
		{"changed backend with migrate-state migrates", InitOptions{MigrateState: true, BackendChanged: true}, append(base, "-migrate-state", "-force-copy")},
		{"migrate-state wins over reconfigure on a change", InitOptions{MigrateState: true, Reconfigure: true, BackendChanged: true}, append(base, "-migrate-state", "-force-copy")},
		{"migrate-state without a change adds nothing", InitOptions{MigrateState: true}, base},
		{"migrate-state without a change leaves reconfigure", InitOptions{MigrateState: true, Reconfigure: true}, append(base, "-reconfigure")},
		{"upgrade", InitOptions{Upgrade: true}, append(base, "-upgrade")},
		{"early variables last", InitOptions{Upgrade: true, Vars: vars}, append(base, "-upgrade", "-var-file=v.tfvars", "-var", "region=eu")},
		{"everything", InitOptions{BackendConfig: []string{"key=x"}, Reconfigure: true, Upgrade: true}, append(base, "-backend-config=key=x", "-reconfigure", "-upgrade")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Init(tt.o)
			require.Equal(t, tt.want, c.Args)
			require.False(t, c.JSON || c.Capture, "init's output is logged as text")
		})
	}
}

func TestVars(t *testing.T) {
	tests := []struct {
		name string
		v    Vars
		want []string
	}{
		{"none", Vars{}, nil},
		{"vars sorted by name", Vars{Values: map[string]string{"zone": "b", "app": "x", "m": "1"}},
			[]string{"-var", "app=x", "-var", "m=1", "-var", "zone=b"}},
		{"values are kept whole", Vars{Values: map[string]string{"tags": `{"a"="b=c"}`, "empty": ""}},
			[]string{"-var", "empty=", "-var", `tags={"a"="b=c"}`}},
		{"var files in the given order", Vars{Files: []string{"z.tfvars", "/abs/a.tfvars.json", "plat-ue2-dev-elasticache.terraform.tfvars.json"}},
			[]string{"-var-file=z.tfvars", "-var-file=/abs/a.tfvars.json", "-var-file=plat-ue2-dev-elasticache.terraform.tfvars.json"}},
		{"var files then vars", Vars{Values: map[string]string{"b": "2", "a": "1"}, Files: []string{"f.tfvars"}},
			[]string{"-var-file=f.tfvars", "-var", "a=1", "-var", "b=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.v.Args())
		})
	}
}

func TestGet(t *testing.T) {
	require.Equal(t, []string{"get", "-no-color"}, Get(GetOptions{}).Args)
	require.Equal(t, []string{"get", "-no-color", "-update", "-var", "a=1"}, Get(GetOptions{Update: true, Vars: Vars{Values: map[string]string{"a": "1"}}}).Args)
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		o    PlanOptions
		want []string
	}{
		{"zero lock timeout is passed as given", PlanOptions{},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout="}},
		{"plain", PlanOptions{Change: Change{LockTimeout: "0ms"}},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=0ms"}},
		{"saved destroy plan", PlanOptions{Change: Change{LockTimeout: "500ms"}, Destroy: true, Out: "/d/plan.tfplan"},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=500ms", "-destroy", "-out=/d/plan.tfplan"}},
		{"every argument", PlanOptions{Change: everyChange("0ms"), Replace: []string{"tfitest_item.b"}, Out: "p"},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=0ms",
				"-lock=true", "-refresh=false", "-parallelism=4",
				"-target=tfitest_item.a", "-target=module.m",
				"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2",
				"-replace=tfitest_item.b", "-out=p"}},
		{"refresh true and lock false", PlanOptions{Change: Change{LockTimeout: "1s", Refresh: ptr(true), Lock: ptr(false)}},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=1s", "-lock=false", "-refresh=true"}},
		{"parallelism 0 is terraform's default", PlanOptions{Change: Change{LockTimeout: "0s", Parallelism: 0}},
			[]string{"plan", "-json", "-detailed-exitcode", "-input=false", "-lock-timeout=0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Plan(tt.o)
			require.Equal(t, tt.want, c.Args)
			require.True(t, c.JSON)
			require.Equal(t, []int{2}, c.OKCodes, "-detailed-exitcode 2 is a plan with changes")
		})
	}
}

func TestApply(t *testing.T) {
	c := Apply(ApplyOptions{Change: Change{LockTimeout: "0ms"}})
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms"}, c.Args)
	require.True(t, c.JSON)
	require.Empty(t, c.OKCodes)
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=2s",
		"-lock=true", "-refresh=false", "-parallelism=4",
		"-target=tfitest_item.a", "-target=module.m",
		"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2",
		"-replace=tfitest_item.b"}, Apply(ApplyOptions{Change: everyChange("2s"), Replace: []string{"tfitest_item.b"}}).Args)
}

// TestApplyPlan: a saved plan carries its variables, targets,
// replacements and refresh mode; terraform refuses them beside it, so
// only what apply itself takes is passed, and the plan file comes last.
func TestApplyPlan(t *testing.T) {
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms", "/d/plan.tfplan"},
		ApplyPlan(ApplyPlanOptions{LockTimeout: "0ms", PlanFile: "/d/plan.tfplan"}).Args)
	c := ApplyPlan(ApplyPlanOptions{LockTimeout: "0ms", Lock: ptr(true), Parallelism: 4, PlanFile: "/d/plan.tfplan"})
	require.Equal(t, []string{"apply", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms", "-lock=true", "-parallelism=4", "/d/plan.tfplan"}, c.Args)
	require.True(t, c.JSON)
	for _, a := range c.Args {
		for _, refused := range []string{"-var", "-target", "-replace", "-refresh", "-destroy", "-backend-config"} {
			require.False(t, strings.HasPrefix(a, refused), "%s passed with a saved plan", a)
		}
	}
}

func TestDestroy(t *testing.T) {
	require.Equal(t, []string{"destroy", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms"}, Destroy(DestroyOptions{Change: Change{LockTimeout: "0ms"}}).Args)
	c := Destroy(DestroyOptions{Change: everyChange("0ms")})
	require.Equal(t, []string{"destroy", "-auto-approve", "-json", "-input=false", "-lock-timeout=0ms",
		"-lock=true", "-refresh=false", "-parallelism=4",
		"-target=tfitest_item.a", "-target=module.m",
		"-var-file=x.tfvars.json", "-var", "a=1", "-var", "b=2"}, c.Args)
	require.True(t, c.JSON)
	for _, a := range c.Args {
		require.False(t, strings.HasPrefix(a, "-replace"), "destroy takes no -replace")
	}
}

func TestOtherCommands(t *testing.T) {
	tests := []struct {
		name    string
		c       Cmd
		want    []string
		capture bool
	}{
		{"validate", Validate(ValidateOptions{}), []string{"validate", "-no-color"}, false},
		{"validate vars", Validate(ValidateOptions{Vars: Vars{Values: map[string]string{"m": "x"}}}), []string{"validate", "-no-color", "-var", "m=x"}, false},
		{"output", OutputJSON(), []string{"output", "-json"}, true},
		{"show", ShowPlan(ShowPlanOptions{PlanFile: "/p"}), []string{"show", "-json", "-no-color", "/p"}, true},
		{"show vars", ShowPlan(ShowPlanOptions{PlanFile: "/p", Vars: Vars{Files: []string{"f.tfvars"}}}), []string{"show", "-json", "-no-color", "-var-file=f.tfvars", "/p"}, true},
		{"workspace", WorkspaceSelect(WorkspaceSelectOptions{Name: "blue"}), []string{"workspace", "select", "-or-create=true", "--", "blue"}, false},
		// A name that looks like a flag stays a name.
		{"workspace named like a flag", WorkspaceSelect(WorkspaceSelectOptions{Name: "-h"}), []string{"workspace", "select", "-or-create=true", "--", "-h"}, false},
		{"workspace with early variables", WorkspaceSelect(WorkspaceSelectOptions{Name: "blue", Vars: Vars{Values: map[string]string{"a": "1"}}}),
			[]string{"workspace", "select", "-or-create=true", "-var", "a=1", "--", "blue"}, false},
		{"state push", StatePush(StatePushOptions{LockTimeout: "0ms", File: "/d/errored.tfstate"}), []string{"state", "push", "-lock-timeout=0ms", "/d/errored.tfstate"}, false},
		{"force-unlock", ForceUnlock("abc-123"), []string{"force-unlock", "-force", "-no-color", "--", "abc-123"}, false},
		{"raw", Raw("state", "list"), []string{"state", "list"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.c.Args)
			require.Equal(t, tt.capture, tt.c.Capture, "stdout captured (never logged)")
			require.False(t, tt.c.JSON)
			require.Equal(t, tt.want[0], tt.c.Name())
		})
	}
	require.Equal(t, "", Raw().Name())
}
