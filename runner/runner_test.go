package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// newTestRunner returns a runner over a fresh workdir root, and the root.
func newTestRunner(t *testing.T, opts ...runner.Option) (*runner.Runner, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "workdirs")
	wd, err := workdir.New(root)
	require.NoError(t, err)
	r, err := runner.New(append([]runner.Option{runner.WithWorkdirs(wd)}, opts...)...)
	require.NoError(t, err)
	return r, root
}

// component is an existing, empty component directory.
func component(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "components", "elasticache")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), nil, 0o644))
	return dir
}

func redisUnits(src string) []runner.Unit {
	var units []runner.Unit
	for _, n := range []string{"1", "2", "3", "4"} {
		units = append(units, runner.Unit{Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-" + n, Source: src}})
	}
	return units
}

// TestFilterIncludeExclude selects with an include and an exclude
// pattern. "*" matches within one segment of the ID and "**" across
// segments, so an exclude of one instance anywhere is "!**/NAME"; the
// one-segment "!*/redis-cluster-3" matches no 3-segment ID and is refused
// by name rather than excluding nothing.
func TestFilterIncludeExclude(t *testing.T) {
	t.Parallel()
	want := [][]string{{
		"plat-ue2-dev/elasticache/redis-cluster-1",
		"plat-ue2-dev/elasticache/redis-cluster-2",
		"plat-ue2-dev/elasticache/redis-cluster-4",
	}}
	for _, opts := range [][]runner.Option{
		{runner.WithFilter("plat-*/elasticache/*", "!**/redis-cluster-3")},
		{runner.WithFilter("plat-*/elasticache/*", "!*/*/redis-cluster-3")},
		{runner.WithFilter("plat-*/elasticache/*"), runner.WithExclude("**/redis-cluster-3")},
	} {
		r, _ := newTestRunner(t, opts...)
		waves, err := r.Order(runner.Apply, redisUnits("components/terraform/elasticache")...)
		require.NoError(t, err)
		require.Equal(t, want, waves)
	}

	r, _ := newTestRunner(t, runner.WithFilter("plat-*/elasticache/*", "!*/redis-cluster-3"))
	_, err := r.Order(runner.Apply, redisUnits("components/terraform/elasticache")...)
	require.ErrorIs(t, err, runner.ErrNoMatch)
	require.ErrorContains(t, err, "*/redis-cluster-3")
}

// TestFilterNoMatch: a pattern that matches nothing is an error naming
// it, from Order and from Run, and Run starts nothing.
func TestFilterNoMatch(t *testing.T) {
	t.Parallel()
	src := component(t)
	for _, pattern := range []string{"plat-ue2-prod/**", "!*/redis-cluster-9"} {
		t.Run(pattern, func(t *testing.T) {
			r, root := newTestRunner(t, runner.WithFilter(pattern), runner.WithTerraform("/nonexistent/terraform"))
			_, err := r.Order(runner.Apply, redisUnits(src)...)
			require.ErrorIs(t, err, runner.ErrNoMatch)
			require.ErrorContains(t, err, pattern)
			rep, err := r.Run(t.Context(), runner.Apply, redisUnits(src)...)
			require.ErrorIs(t, err, runner.ErrNoMatch)
			require.Nil(t, rep)
			requireEmptyDir(t, root)
		})
	}
}

func TestRunNilContext(t *testing.T) {
	t.Parallel()
	r, root := newTestRunner(t)
	var ctx context.Context // a nil context, as a caller might pass by mistake
	rep, err := r.Run(ctx, runner.Apply, redisUnits(component(t))...)
	require.ErrorIs(t, err, runner.ErrNilContext)
	require.Nil(t, rep)
	requireEmptyDir(t, root)
}

// TestNewDoesNoIO: New accepts a terraform path that does not exist; the
// first Run finds out, fails with ErrNoTerraform naming it, and writes
// nothing.
func TestNewDoesNoIO(t *testing.T) {
	t.Parallel()
	r, root := newTestRunner(t, runner.WithTerraform("/nonexistent/terraform"))
	rep, err := r.Run(t.Context(), runner.Apply, redisUnits(component(t))...)
	require.ErrorIs(t, err, runner.ErrNoTerraform)
	require.ErrorContains(t, err, "/nonexistent/terraform")
	require.Nil(t, rep)
	requireEmptyDir(t, root)

	_, err = r.Binary(t.Context())
	require.ErrorIs(t, err, runner.ErrNoTerraform)
}

// TestInvalidUnitsRefusedBeforeAnything: a bad unit anywhere in the set
// fails the Run with ErrInvalidUnit naming it, before any unit starts:
// no workdir is created (the valid units' included).
func TestInvalidUnitsRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	src := component(t)
	valid := runner.Unit{Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src}}
	tests := []struct {
		name  string
		units []runner.Unit
		want  string
	}{
		{"same stack and instance", []runner.Unit{
			valid,
			{ID: "other-id", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src}},
		}, "other-id"},
		{"instance escaping the root", []runner.Unit{
			valid,
			{ID: "escape", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "../../etc", Source: src}},
		}, "../../etc"},
		{"missing source", []runner.Unit{
			valid,
			{Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-2", Source: filepath.Join(src, "nope")}},
		}, filepath.Join(src, "nope")},
		{"empty ID", []runner.Unit{valid, {Workdir: workdir.Spec{Source: src}}}, ""},
		// Issue 22 item 7: Env keys and values that would not reach
		// terraform as the variables they name.
		{"Env key with =", []runner.Unit{valid, envUnit(src, "env-eq", "TF_CLI_CONFIG_FILE=x", "/tmp/evil.tfrc")},
			`unit plat-ue2-dev/env-eq: Env variable name "TF_CLI_CONFIG_FILE=x"`},
		{"empty Env key", []runner.Unit{valid, envUnit(src, "env-empty", "", "x")}, "unit plat-ue2-dev/env-empty: Env has an empty variable name"},
		{"NUL in Env key", []runner.Unit{valid, envUnit(src, "env-nulkey", "A\x00B", "x")}, `unit plat-ue2-dev/env-nulkey: Env variable name "A\x00B"`},
		{"NUL in Env value", []runner.Unit{valid, envUnit(src, "env-nulval", "AWS_PROFILE", "dev\x00prod")},
			`unit plat-ue2-dev/env-nulval: the value of Env variable "AWS_PROFILE" has NUL`},
		// Issue 22 item 8: an ID that would forge lines of the combined
		// output ("[ID] line").
		{"newline in ID", []runner.Unit{valid, {ID: "pr/x\n::error::forged", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "nl", Source: src}}},
			`id "pr/x\n::error::forged" contains the control character U+000A`},
		{"carriage return in ID", []runner.Unit{valid, {ID: "pr/x\r[prod/db] Destroy complete!", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "cr", Source: src}}},
			"U+000D"},
		{"escape in ID", []runner.Unit{valid, {ID: "pr/\x1b[1Ax", Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: "esc", Source: src}}},
			"U+001B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A real terraform is not needed: validation comes first.
			r, root := newTestRunner(t, runner.WithTerraform("/nonexistent/terraform"))
			rep, err := r.Run(t.Context(), runner.Apply, tt.units...)
			require.ErrorIs(t, err, runner.ErrInvalidUnit)
			require.NotErrorIs(t, err, runner.ErrNoTerraform)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, rep)
			requireEmptyDir(t, root)
		})
	}
}

// envUnit is an instance of src in plat-ue2-dev whose Env is {key: value}.
func envUnit(src, instance, key, value string) runner.Unit {
	return runner.Unit{Workdir: workdir.Spec{Stack: "plat-ue2-dev", Instance: instance, Source: src},
		Env: map[string]string{key: value}}
}

// requireEmptyDir checks that nothing was written under dir (it may not
// exist at all).
func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.Empty(t, names, "written under %s", dir)
}
