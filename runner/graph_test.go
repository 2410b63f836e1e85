package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidation(t *testing.T) {
	cases := []struct {
		name  string
		units []Unit
		want  error
		msg   string
	}{
		{"cycle", mkUnits("a:b", "b:c", "c:a", "d"), ErrCycle, "dependency cycle: a -> b -> c -> a"},
		{"self", mkUnits("a:a"), ErrCycle, "a -> a"},
		{"cycle below", mkUnits("top:x", "x:y", "y:z", "z:x"), ErrCycle, "x -> y -> z -> x"},
		{"duplicate", mkUnits("a", "b", "a"), ErrDuplicateUnit, `"a"`},
		{"unknown dep", mkUnits("a:ghost"), ErrUnknownDependency, `unit "a" depends on "ghost"`},
		{"empty id", []Unit{{}}, ErrInvalidUnit, "unit 0 has an empty id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeRunner(t, func(ctx context.Context, j *job) error {
				t.Errorf("unit %s ran despite invalid input", j.res.Unit)
				return nil
			})
			rep, err := r.Run(t.Context(), Apply, tc.units...)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			require.Nil(t, rep)
			_, err = r.Plan(Apply, tc.units...)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDefaultID(t *testing.T) {
	u := Unit{}
	u.Workdir.Stack, u.Workdir.Instance = "plat-ue2-dev", "elasticache/redis-1"
	waves, err := fakeRunner(t, nil).Plan(Apply, u, Unit{ID: "x", DependsOn: []string{"plat-ue2-dev/elasticache/redis-1"}})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"plat-ue2-dev/elasticache/redis-1"}, {"x"}}, waves)
}

func TestPlanWaves(t *testing.T) {
	units := mkUnits("vpc", "db:vpc", "cache:vpc", "app:db,cache", "dns")
	r := fakeRunner(t, nil)
	waves, err := r.Plan(Apply, units...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"dns", "vpc"}, {"cache", "db"}, {"app"}}, waves)
	waves, err = r.Plan(Destroy, units...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"app", "dns"}, {"cache", "db"}, {"vpc"}}, waves)
}

func TestFilters(t *testing.T) {
	units := mkUnits(
		"plat-ue2-dev/vpc",
		"plat-ue2-dev/redis-1:plat-ue2-dev/vpc",
		"plat-ue2-dev/redis-2:plat-ue2-dev/vpc",
		"plat-ue2-prod/redis-1",
		"plat-ue2-dev/app:plat-ue2-dev/redis-1",
	)
	cases := []struct {
		name string
		opts []Option
		want [][]string
	}{
		{"none", nil, [][]string{{"plat-ue2-dev/vpc", "plat-ue2-prod/redis-1"}, {"plat-ue2-dev/redis-1", "plat-ue2-dev/redis-2"}, {"plat-ue2-dev/app"}}},
		{"glob", []Option{WithFilter("*/redis-*")}, [][]string{{"plat-ue2-dev/redis-1", "plat-ue2-dev/redis-2", "plat-ue2-prod/redis-1"}}},
		{"negation", []Option{WithFilter("plat-ue2-dev/*", "!*/redis-2")}, [][]string{{"plat-ue2-dev/vpc"}, {"plat-ue2-dev/redis-1"}, {"plat-ue2-dev/app"}}},
		{"only negation", []Option{WithFilter("!plat-ue2-dev/*")}, [][]string{{"plat-ue2-prod/redis-1"}}},
		{"include exclude", []Option{WithInclude("plat-ue2-dev/*"), WithExclude("*/redis-?")}, [][]string{{"plat-ue2-dev/vpc"}, {"plat-ue2-dev/app"}}},
		// app still waits for vpc through the unselected redis-1.
		{"order through unselected", []Option{WithFilter("*/vpc", "*/app")}, [][]string{{"plat-ue2-dev/vpc"}, {"plat-ue2-dev/app"}}},
		{"no match", []Option{WithFilter("nope/*")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			r := fakeRunner(t, func(ctx context.Context, j *job) error {
				ran = append(ran, j.res.Unit) // parallelism 1: no concurrent append
				return nil
			}, append(tc.opts, WithParallelism(1))...)
			waves, err := r.Plan(Apply, units...)
			require.NoError(t, err)
			require.Equal(t, tc.want, waves)

			rep, err := r.Run(t.Context(), Apply, units...)
			require.NoError(t, err)
			var flat []string
			for _, w := range tc.want {
				flat = append(flat, w...)
			}
			require.ElementsMatch(t, flat, ran, "runs exactly the selected units")
			require.Len(t, rep.Results, len(flat))
		})
	}
	_, err := newRunner([]Option{WithFilter("[")})
	require.ErrorIs(t, err, ErrBadOption)
	require.ErrorContains(t, err, `"["`)
	_, err = newRunner([]Option{WithFilter("!")})
	require.ErrorIs(t, err, ErrBadOption)
}
