package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWaves(t *testing.T) {
	g := mkGraph(t, "vpc", "db:vpc", "cache:vpc", "app:db,cache", "dns")
	cases := []struct {
		name string
		p    Policy
		want [][]string
	}{
		{"apply", Policy{}, [][]string{{"dns", "vpc"}, {"cache", "db"}, {"app"}}},
		{"reverse", Policy{Reverse: true}, [][]string{{"app", "dns"}, {"cache", "db"}, {"vpc"}}},
		{"ignore order", Policy{IgnoreOrder: true}, [][]string{{"app", "cache", "db", "dns", "vpc"}}},
		{"ignore order reverse", Policy{IgnoreOrder: true, Reverse: true}, [][]string{{"app", "cache", "db", "dns", "vpc"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, g.Waves(nil, tc.p))
			require.Equal(t, tc.want, g.Waves([]bool{true, true, true, true, true}, tc.p))
		})
	}
	require.Nil(t, g.Waves(make([]bool, 5), Policy{}), "nothing selected")
	require.Panics(t, func() { g.Waves([]bool{true}, Policy{}) }, "a selection of the wrong length is a programming error")
}

// TestWavesThroughUnselected checks that filtering never reorders: app
// still comes after vpc through the unselected db, and in reverse before.
func TestWavesThroughUnselected(t *testing.T) {
	g := mkGraph(t, "s/vpc", "s/db:s/vpc", "s/app:s/db", "s/dns")
	var f Filter
	require.NoError(t, f.Add([]string{"*/vpc", "*/app", "*/dns"}, false))
	sel, err := g.Select(&f, 0, 1)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"s/dns", "s/vpc"}, {"s/app"}}, g.Waves(sel, Policy{}))
	require.Equal(t, [][]string{{"s/app", "s/dns"}, {"s/vpc"}}, g.Waves(sel, Policy{Reverse: true}))
}

// TestWavesIndependentOfInputOrder checks that the order units are given
// in changes nothing.
func TestWavesIndependentOfInputOrder(t *testing.T) {
	a := mkGraph(t, "vpc", "db:vpc", "cache:vpc", "app:db,cache", "dns")
	b := mkGraph(t, "dns", "app:cache,db", "cache:vpc", "db:vpc", "vpc")
	for _, p := range []Policy{{}, {Reverse: true}} {
		require.Equal(t, a.Waves(nil, p), b.Waves(nil, p))
	}
}
