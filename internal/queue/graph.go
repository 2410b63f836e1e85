package queue

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Graph is a validated dependency graph over a set of units. Nodes are
// indexes into the IDs given to New, so callers keep their own order and
// their own per-unit data. A Graph is immutable and safe for concurrent
// use.
type Graph struct {
	ids   []string
	index map[string]int
	deps  [][]int // deps[i]: the units i depends on, sorted by ID, no repeats
	rdeps [][]int // rdeps[i]: the units that depend on i, sorted by ID
	// order is the node indexes in ID order and rank[i] is unit i's
	// position in it: sorted once in New, since a Graph never changes,
	// so that a Run over many units never sorts them again.
	order []int
	rank  []int
}

// New validates the units and their dependencies and returns their graph.
// deps[i] lists the IDs unit i depends on; deps may be shorter than ids
// (missing entries mean no dependencies) and may repeat an ID. IDs must be
// non-empty, valid UTF-8 with no control character (see badIDRune), and
// unique, every dependency must name a unit other than
// itself, and there must be no cycle. The error wraps ErrInvalidUnit,
// ErrDuplicateUnit, ErrUnknownDependency or ErrCycle and names the units
// involved.
func New(ids []string, deps [][]string) (*Graph, error) {
	if len(deps) > len(ids) {
		return nil, fmt.Errorf("%w: dependencies given for %d units, but there are %d units", ErrInvalidUnit, len(deps), len(ids))
	}
	g := &Graph{ids: slices.Clone(ids), index: make(map[string]int, len(ids))}
	for i, id := range g.ids {
		if id == "" {
			return nil, fmt.Errorf("%w: unit %d has an empty id", ErrInvalidUnit, i)
		}
		if why := badID(id); why != "" {
			return nil, fmt.Errorf("%w: unit %d: id %q %s", ErrInvalidUnit, i, id, why)
		}
		if j, dup := g.index[id]; dup {
			return nil, fmt.Errorf("%w: %q (units %d and %d)", ErrDuplicateUnit, id, j, i)
		}
		g.index[id] = i
	}
	g.deps = make([][]int, len(g.ids))
	g.rdeps = make([][]int, len(g.ids))
	for i, ds := range deps {
		for _, d := range ds {
			j, ok := g.index[d]
			if !ok {
				return nil, fmt.Errorf("%w: unit %q depends on %q, which is not among the units", ErrUnknownDependency, g.ids[i], d)
			}
			if j == i {
				return nil, fmt.Errorf("%w: unit %q depends on itself", ErrInvalidUnit, g.ids[i])
			}
			if !slices.Contains(g.deps[i], j) {
				g.deps[i] = append(g.deps[i], j)
				g.rdeps[j] = append(g.rdeps[j], i)
			}
		}
	}
	for i := range g.ids {
		g.sortByID(g.deps[i])
		g.sortByID(g.rdeps[i])
	}
	g.order = make([]int, len(g.ids))
	for i := range g.order {
		g.order[i] = i
	}
	g.sortByID(g.order)
	g.rank = make([]int, len(g.ids))
	for r, i := range g.order {
		g.rank[i] = r
	}
	if cyc := g.findCycle(); cyc != nil {
		names := make([]string, len(cyc))
		for k, n := range cyc {
			names[k] = g.ids[n]
		}
		return nil, fmt.Errorf("%w: %s", ErrCycle, strings.Join(names, " -> "))
	}
	return g, nil
}

// badID says what is wrong with a non-empty unit ID, or "" when nothing
// is. An ID prefixes every line of a unit's output ("[ID] ") and names it
// in logs and CI annotations: a newline or another control character in
// it would let the ID forge lines (a CI workflow command, another unit's
// "Destroy complete!"), so IDs are refused with any rune badIDRune
// reports, as workdir.ID refuses stack and instance names.
func badID(id string) string {
	if !utf8.ValidString(id) {
		return "is not valid UTF-8"
	}
	if i := strings.IndexFunc(id, badIDRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return fmt.Sprintf("contains the control character %U", r)
	}
	return ""
}

// badIDRune reports the runes a unit ID may not hold: C0 and C1 controls,
// DEL, and the Unicode line and paragraph separators.
func badIDRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// Len returns the number of units.
func (g *Graph) Len() int { return len(g.ids) }

// ID returns the ID of unit i.
func (g *Graph) ID(i int) string { return g.ids[i] }

// Index returns the index of the unit with the given ID.
func (g *Graph) Index(id string) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Deps returns the direct dependencies of unit i, sorted by ID. The slice
// is the caller's to keep.
func (g *Graph) Deps(i int) []int { return slices.Clone(g.deps[i]) }

func (g *Graph) sortByID(s []int) {
	slices.SortFunc(s, func(a, b int) int { return strings.Compare(g.ids[a], g.ids[b]) })
}

// sorted returns the node indexes in ID order, the order every walk uses so
// that errors, waves, shards and start order never depend on the caller's
// ordering. Callers only read it.
func (g *Graph) sorted() []int { return g.order }

// findCycle returns a cycle as a closed path (first node repeated at the
// end), or nil. The walk is iterative so that a long chain of units cannot
// exhaust the stack.
func (g *Graph) findCycle() []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.ids))
	type frame struct{ n, next int }
	var stack []frame
	for _, root := range g.sorted() {
		if color[root] != white {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], frame{n: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(g.deps[top.n]) {
				color[top.n] = black
				stack = stack[:len(stack)-1]
				continue
			}
			d := g.deps[top.n][top.next]
			top.next++
			switch color[d] {
			case grey:
				at := slices.IndexFunc(stack, func(f frame) bool { return f.n == d })
				cyc := make([]int, 0, len(stack)-at+1)
				for _, f := range stack[at:] {
					cyc = append(cyc, f.n)
				}
				return append(cyc, d)
			case white:
				color[d] = grey
				stack = append(stack, frame{n: d})
			}
		}
	}
	return nil
}

// waitsFor returns, for every selected unit, the selected units that must
// be done before it starts under p: its dependencies (its dependents under
// Reverse), looking through unselected units, so that filtering never
// reorders what runs. Under IgnoreOrder nothing waits. Lists are sorted by
// ID; unselected units get nil.
func (g *Graph) waitsFor(sel []bool, p Policy) [][]int {
	out := make([][]int, len(g.ids))
	if p.IgnoreOrder {
		return out
	}
	before := g.deps
	if p.Reverse {
		before = g.rdeps
	}
	seen := make([]int, len(g.ids)) // seen[n] == i+1: n visited for unit i
	var stack []int
	for i := range g.ids {
		if !sel[i] {
			continue
		}
		stack = append(stack[:0], before[i]...)
		for _, n := range before[i] {
			seen[n] = i + 1
		}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if sel[n] {
				out[i] = append(out[i], n)
				continue
			}
			for _, m := range before[n] {
				if seen[m] != i+1 {
					seen[m] = i + 1
					stack = append(stack, m)
				}
			}
		}
		g.sortByID(out[i])
	}
	return out
}

// selection checks a caller's selection: nil means every unit.
func (g *Graph) selection(sel []bool) []bool {
	if sel == nil {
		sel = make([]bool, len(g.ids))
		for i := range sel {
			sel[i] = true
		}
		return sel
	}
	if len(sel) != len(g.ids) {
		panic(fmt.Sprintf("queue: selection has %d entries for a graph of %d units", len(sel), len(g.ids)))
	}
	return sel
}
