package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSelectNoMatch(t *testing.T) {
	g, err := New(stackIDs, nil)
	require.NoError(t, err)
	cases := []struct {
		name             string
		include, exclude []string
		msg              string
	}{
		{"include", []string{"*/vpc", "plat-ue2-stg/*"}, nil, `filter pattern matches no unit: "plat-ue2-stg/*"`},
		{"negated include", []string{"*/vpc", "!*/redis-cluster-4"}, nil, `filter pattern matches no unit: "!*/redis-cluster-4"`},
		{"exclude", nil, []string{"plat-ue2-dev/redis-cluster-3"}, `filter pattern matches no unit: "plat-ue2-dev/redis-cluster-3"`},
		{"star does not cross", []string{"plat-ue2-dev/*/*/*"}, nil, `filter pattern matches no unit: "plat-ue2-dev/*/*/*"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Filter
			require.NoError(t, f.Add(tc.include, false))
			require.NoError(t, f.Add(tc.exclude, true))
			sel, err := g.Select(&f, 0, 1)
			require.ErrorIs(t, err, ErrNoMatch)
			require.EqualError(t, err, tc.msg)
			require.Nil(t, sel)
		})
	}
}

// TestSelectNoMatchIsOverAllUnits checks that a pattern matching only
// units of another shard is no error, and selects nothing here.
func TestSelectNoMatchIsOverAllUnits(t *testing.T) {
	g := mkGraph(t, "a/x", "a/y:a/x", "b/z")
	var f Filter
	require.NoError(t, f.Add([]string{"b/*"}, false))
	sel0, err := g.Select(&f, 0, 2)
	require.NoError(t, err)
	sel1, err := g.Select(&f, 1, 2)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false}, sel0, "shard 0 holds a/x and a/y")
	require.Equal(t, []bool{false, false, true}, sel1)
}

func TestSelect(t *testing.T) {
	g := mkGraph(t, "s/a", "s/b:s/a", "s/c", "t/d", "t/e:t/d")
	var f Filter
	require.NoError(t, f.Add([]string{"!*/b"}, false))
	all, err := g.Select(nil, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, true, true}, all)
	sel, err := g.Select(&f, 0, 1)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, true, true}, sel)
	// Shards first (over all units), then the filter: s/a+s/b and
	// t/d+t/e are the two largest components.
	sel, err = g.Select(&f, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, false, false}, sel)
	sel, err = g.Select(&f, 1, 2)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, true, true}, sel)

	for _, bad := range [][2]int{{-1, 3}, {3, 3}, {1, 1}, {1, 0}, {-1, 0}} {
		_, err := g.Select(nil, bad[0], bad[1])
		require.ErrorIs(t, err, ErrBadShard, "index %d of %d", bad[0], bad[1])
		require.ErrorContains(t, err, "index")
	}
}
