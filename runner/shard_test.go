package runner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomDAG returns n units where each may depend on earlier ones (so there
// is never a cycle), sparse enough to leave several components.
func randomDAG(rng *rand.Rand, n int) []Unit {
	us := make([]Unit, n)
	for i := range us {
		us[i].ID = fmt.Sprintf("stack/u%03d", i)
		for j := range i {
			if rng.IntN(n) < 1 {
				us[i].DependsOn = append(us[i].DependsOn, us[j].ID)
			}
		}
	}
	return us
}

func shardOf(t *testing.T, index, count int, units []Unit) []string {
	t.Helper()
	r, err := newRunner([]Option{WithShard(index, count)})
	require.NoError(t, err)
	waves, err := r.Plan(Apply, units...)
	require.NoError(t, err)
	return slices.Concat(waves...)
}

func TestShardProperties(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		units := randomDAG(rng, 1+rng.IntN(40))
		count := 1 + rng.IntN(6)
		t.Run(fmt.Sprintf("seed%d_n%d_shards%d", seed, len(units), count), func(t *testing.T) {
			shardOfUnit := map[string]int{}
			loads := make([]int, count)
			for s := range count {
				for _, id := range shardOf(t, s, count, units) {
					prev, dup := shardOfUnit[id]
					require.False(t, dup, "%s is on shards %d and %d", id, prev, s)
					shardOfUnit[id] = s
					loads[s]++
				}
			}
			require.Len(t, shardOfUnit, len(units), "every unit is on some shard")
			for _, u := range units {
				for _, d := range u.DependsOn {
					require.Equal(t, shardOfUnit[u.ID], shardOfUnit[d], "edge %s -> %s crosses shards", u.ID, d)
				}
			}
			// Greedy largest-first onto the least loaded shard keeps the
			// spread within the largest component.
			g, err := unitGraph(units)
			require.NoError(t, err)
			require.LessOrEqual(t, slices.Max(loads)-slices.Min(loads), largestComponent(g))

			// Deterministic: the same units in another order give the same split.
			shuffled := slices.Clone(units)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for s := range count {
				got := shardOf(t, s, count, shuffled)
				for _, id := range got {
					require.Equal(t, s, shardOfUnit[id], "%s moved shards when units were reordered", id)
				}
			}
		})
	}
}

func largestComponent(g *graph) int {
	sh := g.shards(len(g.ids)) // with a shard per node, each component gets its own
	sizes := map[int]int{}
	for _, s := range sh {
		sizes[s]++
	}
	m := 0
	for _, n := range sizes {
		m = max(m, n)
	}
	return m
}

func TestShardBalance(t *testing.T) {
	// Components of sizes 4, 3, 2, 1, 1, 1 over 2 shards, largest first onto
	// the least loaded (lowest index on ties): a, d, e and b, c, f.
	units := mkUnits("a1", "a2:a1", "a3:a2", "a4:a1", "b1", "b2:b1", "b3:b2", "c1", "c2:c1", "d", "e", "f")
	require.Equal(t, []string{"a1", "d", "e", "a2", "a4", "a3"}, shardOf(t, 0, 2, units))
	require.Equal(t, []string{"b1", "c1", "f", "b2", "c2", "b3"}, shardOf(t, 1, 2, units))
	for _, bad := range [][2]int{{0, 0}, {2, 2}, {-1, 3}} {
		_, err := newRunner([]Option{WithShard(bad[0], bad[1])})
		require.ErrorIs(t, err, ErrBadOption)
	}
}
