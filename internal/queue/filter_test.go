package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// stackIDs are unit IDs in the runner's default form, stack/instance,
// with instances one and two levels deep.
var stackIDs = []string{
	"plat-ue2-dev/vpc",
	"plat-ue2-dev/elasticache/redis-cluster-1",
	"plat-ue2-dev/elasticache/redis-cluster-2",
	"plat-ue2-dev/elasticache/redis-cluster-3",
	"plat-ue2-prod/vpc",
	"plat-ue2-prod/elasticache/redis-cluster-3",
	"core-gbl-root/account",
}

// selected returns the IDs of stackIDs that f selects, in order.
func selected(f *Filter) []string {
	var out []string
	for _, id := range stackIDs {
		if f.match(id) {
			out = append(out, id)
		}
	}
	return out
}

func TestFilterMatch(t *testing.T) {
	cases := []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		{"zero value selects all", nil, nil, stackIDs},
		{
			// The example of docs/api.md: "**/" reaches the instance below the
			// stack in every stack.
			"readme example",
			[]string{"plat-*/elasticache/*", "!**/redis-cluster-3"}, nil,
			[]string{"plat-ue2-dev/elasticache/redis-cluster-1", "plat-ue2-dev/elasticache/redis-cluster-2"},
		},
		{
			"star stays inside a segment",
			[]string{"plat-ue2-dev/*"}, nil,
			[]string{"plat-ue2-dev/vpc"},
		},
		{
			"doublestar crosses segments",
			[]string{"plat-ue2-dev/**"}, nil,
			[]string{"plat-ue2-dev/vpc", "plat-ue2-dev/elasticache/redis-cluster-1", "plat-ue2-dev/elasticache/redis-cluster-2", "plat-ue2-dev/elasticache/redis-cluster-3"},
		},
		{
			"doublestar in the middle matches zero segments too",
			[]string{"plat-ue2-prod/**/vpc"}, nil,
			[]string{"plat-ue2-prod/vpc"},
		},
		{
			"mid-segment doublestar is a star",
			[]string{"plat-ue2-dev/elasti**"}, nil,
			nil,
		},
		{
			"a pattern matches the whole ID, never a part of it",
			[]string{"redis-cluster-3", "elasticache/*", "*/redis-cluster-3"}, nil,
			nil,
		},
		{
			"instance path in every stack",
			[]string{"*/elasticache/*"}, nil,
			[]string{"plat-ue2-dev/elasticache/redis-cluster-1", "plat-ue2-dev/elasticache/redis-cluster-2", "plat-ue2-dev/elasticache/redis-cluster-3", "plat-ue2-prod/elasticache/redis-cluster-3"},
		},
		{
			"exclude list",
			nil, []string{"plat-ue2-dev/**", "*/account"},
			[]string{"plat-ue2-prod/vpc", "plat-ue2-prod/elasticache/redis-cluster-3"},
		},
		{
			"bang in an exclude list includes",
			nil, []string{"!core-*/*"},
			[]string{"core-gbl-root/account"},
		},
		{
			"exclude wins over include",
			[]string{"*/vpc"}, []string{"plat-ue2-prod/*"},
			[]string{"plat-ue2-dev/vpc"},
		},
		{
			"alternatives and classes",
			[]string{"plat-ue2-{dev,prod}/elasticache/redis-cluster-[13]"}, nil,
			[]string{"plat-ue2-dev/elasticache/redis-cluster-1", "plat-ue2-dev/elasticache/redis-cluster-3", "plat-ue2-prod/elasticache/redis-cluster-3"},
		},
		{
			"escaped glob character",
			[]string{`plat-ue2-dev/v\pc`}, nil,
			[]string{"plat-ue2-dev/vpc"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Filter
			require.NoError(t, f.Add(tc.include, false))
			require.NoError(t, f.Add(tc.exclude, true))
			require.Equal(t, tc.want, selected(&f))
		})
	}
	var nilFilter *Filter
	require.True(t, nilFilter.match("anything"))
}

func TestFilterBadPattern(t *testing.T) {
	cases := []struct {
		pattern string
		msg     string
	}{
		{"", `bad filter pattern: "" is empty`},
		{"!", `bad filter pattern: "!" is empty`},
		{"[", `bad filter pattern: "[" is not a valid glob`},
		{"!a/[b", `bad filter pattern: "!a/[b" is not a valid glob`},
		{`a\`, `bad filter pattern: "a\\" is not a valid glob`},
		{"{a,b", `bad filter pattern: "{a,b" is not a valid glob`},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			for _, exclude := range []bool{false, true} {
				var f Filter
				err := f.Add([]string{"*/vpc", tc.pattern}, exclude)
				require.ErrorIs(t, err, ErrBadPattern)
				require.EqualError(t, err, tc.msg)
				require.Equal(t, Filter{}, f, "nothing of a refused list is added")
			}
		})
	}
}
