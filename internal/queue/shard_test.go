package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomDAG returns n unit IDs and their dependencies, each unit possibly
// depending on earlier ones (so there is never a cycle), sparse enough to
// leave several components.
func randomDAG(rng *rand.Rand, n int) ([]string, [][]string) {
	ids := make([]string, n)
	deps := make([][]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("stack/u%03d", i)
		for j := range i {
			if rng.IntN(n) < 1 {
				deps[i] = append(deps[i], ids[j])
			}
		}
	}
	return ids, deps
}

// shardIDs returns the IDs on one shard.
func shardIDs(t *testing.T, g *Graph, index, count int) []string {
	t.Helper()
	sel, err := g.Select(nil, index, count)
	require.NoError(t, err)
	var out []string
	for i, s := range sel {
		if s {
			out = append(out, g.ID(i))
		}
	}
	return out
}

func TestShardProperties(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ids, deps := randomDAG(rng, 1+rng.IntN(40))
		count := 1 + rng.IntN(6)
		t.Run(fmt.Sprintf("seed%d_n%d_shards%d", seed, len(ids), count), func(t *testing.T) {
			g, err := New(ids, deps)
			require.NoError(t, err)
			shardOf := map[string]int{}
			loads := make([]int, count)
			for s := range count {
				for _, id := range shardIDs(t, g, s, count) {
					prev, dup := shardOf[id]
					require.False(t, dup, "%s is on shards %d and %d", id, prev, s)
					shardOf[id] = s
					loads[s]++
				}
			}
			require.Len(t, shardOf, len(ids), "every unit is on some shard")
			for i, ds := range deps {
				for _, d := range ds {
					require.Equal(t, shardOf[ids[i]], shardOf[d], "edge %s -> %s crosses shards", ids[i], d)
				}
			}
			// Greedy largest-first onto the least loaded shard keeps the
			// spread within the largest component.
			require.LessOrEqual(t, slices.Max(loads)-slices.Min(loads), largestComponent(g))

			// Deterministic: the same units in another order give the same split.
			perm := rng.Perm(len(ids))
			sIDs := make([]string, len(ids))
			sDeps := make([][]string, len(ids))
			for k, p := range perm {
				sIDs[k], sDeps[k] = ids[p], deps[p]
			}
			shuffled, err := New(sIDs, sDeps)
			require.NoError(t, err)
			for s := range count {
				for _, id := range shardIDs(t, shuffled, s, count) {
					require.Equal(t, s, shardOf[id], "%s moved shards when units were reordered", id)
				}
			}
		})
	}
}

// largestComponent is the size of the largest connected component, found
// independently of shards() by union-find.
func largestComponent(g *Graph) int {
	parent := make([]int, g.Len())
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i := range g.Len() {
		for _, d := range g.Deps(i) {
			parent[find(i)] = find(d)
		}
	}
	sizes := map[int]int{}
	m := 0
	for i := range g.Len() {
		sizes[find(i)]++
		m = max(m, sizes[find(i)])
	}
	return m
}

func TestShardBalance(t *testing.T) {
	// Components of sizes 4, 3, 2, 1, 1, 1 over 2 shards, largest first onto
	// the least loaded (lowest index on ties): a, d, e and b, c, f.
	g := mkGraph(t, "a1", "a2:a1", "a3:a2", "a4:a1", "b1", "b2:b1", "b3:b2", "c1", "c2:c1", "d", "e", "f")
	require.Equal(t, []string{"a1", "a2", "a3", "a4", "d", "e"}, shardIDs(t, g, 0, 2))
	require.Equal(t, []string{"b1", "b2", "b3", "c1", "c2", "f"}, shardIDs(t, g, 1, 2))
	// More shards than components: the extra shards are empty, not an error.
	require.Empty(t, shardIDs(t, g, 6, 7))
}
