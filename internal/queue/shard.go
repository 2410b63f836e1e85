package queue

import "slices"

// shards splits the graph into count shards and returns the shard of every
// unit. Connected components of the undirected dependency graph stay
// whole, so no dependency edge crosses shards. Components are placed
// largest first onto the least-loaded shard (lowest index on ties), and
// components of equal size are ordered by their smallest ID: the split
// depends only on the IDs and edges, never on the order units were given
// in.
func (g *Graph) shards(count int) []int {
	comp := make([]int, len(g.ids))
	for i := range comp {
		comp[i] = -1
	}
	type component struct {
		nodes []int
	}
	var comps []component
	for _, start := range g.sorted() {
		if comp[start] >= 0 {
			continue
		}
		c := len(comps)
		comps = append(comps, component{})
		stack := []int{start}
		comp[start] = c
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comps[c].nodes = append(comps[c].nodes, n)
			for _, next := range [][]int{g.deps[n], g.rdeps[n]} {
				for _, m := range next {
					if comp[m] < 0 {
						comp[m] = c
						stack = append(stack, m)
					}
				}
			}
		}
	}
	// comps is already in order of smallest ID, since the walk starts
	// from units in ID order; a stable sort by size keeps that as the
	// tie-break.
	slices.SortStableFunc(comps, func(a, b component) int { return len(b.nodes) - len(a.nodes) })
	load := make([]int, count)
	shard := make([]int, len(g.ids))
	for _, c := range comps {
		best := 0
		for s := 1; s < count; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		load[best] += len(c.nodes)
		for _, n := range c.nodes {
			shard[n] = best
		}
	}
	return shard
}
