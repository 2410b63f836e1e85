package runner

import (
	"fmt"
	"slices"
	"strings"
)

// graph is the validated dependency graph of a set of units. Nodes are
// indexes into the caller's unit slice, so results keep the caller's order.
type graph struct {
	ids   []string
	index map[string]int
	deps  [][]int // deps[i]: the units i depends on, sorted by ID, no repeats
	rdeps [][]int // rdeps[i]: the units that depend on i, sorted by ID
}

// newGraph validates ids and their dependencies: IDs are non-empty and
// unique, every dependency names a unit, and there is no cycle.
func newGraph(ids []string, deps [][]string) (*graph, error) {
	g := &graph{ids: ids, index: make(map[string]int, len(ids))}
	for i, id := range ids {
		if id == "" {
			return nil, fmt.Errorf("%w: unit %d has an empty id", ErrInvalidUnit, i)
		}
		if j, dup := g.index[id]; dup {
			return nil, fmt.Errorf("%w: %q (units %d and %d)", ErrDuplicateUnit, id, j, i)
		}
		g.index[id] = i
	}
	g.deps = make([][]int, len(ids))
	g.rdeps = make([][]int, len(ids))
	for i, ds := range deps {
		for _, d := range ds {
			j, ok := g.index[d]
			if !ok {
				return nil, fmt.Errorf("%w: unit %q depends on %q, which is not among the units", ErrUnknownDependency, ids[i], d)
			}
			if !slices.Contains(g.deps[i], j) {
				g.deps[i] = append(g.deps[i], j)
				g.rdeps[j] = append(g.rdeps[j], i)
			}
		}
	}
	for i := range ids {
		g.sortByID(g.deps[i])
		g.sortByID(g.rdeps[i])
	}
	if cyc := g.findCycle(); cyc != nil {
		names := make([]string, len(cyc))
		for k, n := range cyc {
			names[k] = ids[n]
		}
		return nil, fmt.Errorf("%w: %s", ErrCycle, strings.Join(names, " -> "))
	}
	return g, nil
}

func (g *graph) sortByID(s []int) {
	slices.SortFunc(s, func(a, b int) int { return strings.Compare(g.ids[a], g.ids[b]) })
}

// sorted returns the node indexes in ID order, the order every walk uses so
// that errors, plans and shards do not depend on the caller's ordering.
func (g *graph) sorted() []int {
	s := make([]int, len(g.ids))
	for i := range s {
		s[i] = i
	}
	g.sortByID(s)
	return s
}

// findCycle returns a cycle as a closed path (first node repeated at the
// end), or nil.
func (g *graph) findCycle() []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.ids))
	var stack []int
	var found []int
	var visit func(n int) bool
	visit = func(n int) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range g.deps[n] {
			switch color[d] {
			case grey:
				at := slices.Index(stack, d)
				found = append(slices.Clone(stack[at:]), d)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range g.sorted() {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

// edges returns, for every node, the nodes that must finish before it
// starts, restricted to the selected nodes. A path through unselected nodes
// still orders its selected ends, so filtering never reorders what runs.
// reverse flips every edge (destroy order).
func (g *graph) edges(selected []bool, reverse bool) [][]int {
	before := g.deps
	if reverse {
		before = g.rdeps
	}
	out := make([][]int, len(g.ids))
	for i := range g.ids {
		if !selected[i] {
			continue
		}
		seen := make(map[int]bool)
		var walk func(n int)
		walk = func(n int) {
			for _, d := range before[n] {
				if seen[d] {
					continue
				}
				seen[d] = true
				if selected[d] {
					out[i] = append(out[i], d)
				} else {
					walk(d)
				}
			}
		}
		walk(i)
		g.sortByID(out[i])
	}
	return out
}
