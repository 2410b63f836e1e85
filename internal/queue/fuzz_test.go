package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// FuzzWaves builds graphs from arbitrary IDs, dependency edges, filter
// patterns and shard counts, and checks New, Select, Waves and Run against
// their definitions, computed here independently:
//
//   - New succeeds exactly when the IDs are non-empty, valid UTF-8 with
//     no control character or line separator, and unique, and the
//     dependencies name other known units without a cycle; otherwise the
//     error wraps the sentinel of the first problem class found.
//   - Filter.Add refuses exactly the empty and invalid patterns; Select
//     fails with ErrNoMatch exactly when some pattern matches no ID, and
//     names such a pattern.
//   - The shards of one count hold every filtered unit exactly once and no
//     dependency edge crosses them.
//   - Waves lists each selected unit once, in sorted non-empty waves, and
//     puts every unit after the selected units it depends on directly or
//     through others (before them under Reverse; one wave under
//     IgnoreOrder).
//   - Run with Parallelism 1 starts units in an order consistent with that.
//
// patterns is a ";"-separated list; mode bit 7 sets IgnoreOrder and the
// rest mod 5 is the shard count.
func FuzzWaves(f *testing.F) {
	f.Add("a,b,c", []byte{1, 0, 2, 1}, "", false, 0)
	f.Add("a,b,c", []byte{0, 1, 1, 2, 2, 0}, "", false, 0)
	f.Add("a,a", []byte{}, "", false, 0)
	f.Add("a,,b", []byte{}, "", false, 0)
	f.Add("a,b", []byte{1, 1}, "", false, 0)
	f.Add("s/x,s/y,t/z", []byte{0, 1, 1, 2}, "s/*", true, 0)
	f.Add("s/x,s/y,t/z", []byte{0, 2, 2, 1}, "!t/*", false, 2)
	f.Add("a,b", []byte{0, 9}, "[", false, 0)
	f.Add("a", []byte{}, "!", false, 0)
	f.Add("a/b/c,a/d,e", []byte{0, 1}, "a/**;!d", false, 3)
	f.Add("a,b,c,d", []byte{1, 0, 3, 2}, "", true, 0x80|2)
	f.Fuzz(func(t *testing.T, idList string, edges []byte, patterns string, reverse bool, mode int) {
		ids := strings.Split(idList, ",")
		if len(ids) > 12 {
			ids = ids[:12]
		}
		deps := make([][]string, len(ids))
		// Edge (a, b): unit a depends on unit b; an index past the units
		// names a unit that does not exist.
		for k := 0; k+1 < len(edges) && k < 64; k += 2 {
			a, b := int(edges[k])%len(ids), int(edges[k+1])
			dep := "missing"
			if b < len(ids) {
				dep = ids[b]
			}
			deps[a] = append(deps[a], dep)
		}

		g, err := New(ids, deps)
		if want := fuzzProblem(ids, deps); want != nil {
			if !errors.Is(err, want) {
				t.Fatalf("New(%q, %q) = %v, want an error wrapping %v", ids, deps, err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("New(%q, %q) refused a valid graph: %v", ids, deps, err)
		}

		var filter Filter
		var pats []string
		if patterns != "" {
			pats = strings.Split(patterns, ";")
		}
		err = filter.Add(pats, false)
		badPattern := slices.ContainsFunc(pats, func(p string) bool {
			glob := strings.TrimPrefix(p, "!")
			return glob == "" || !doublestar.ValidatePattern(glob)
		})
		if badPattern != (err != nil) {
			t.Fatalf("Add(%q) = %v, bad pattern %v", pats, err, badPattern)
		}
		if err != nil {
			if !errors.Is(err, ErrBadPattern) {
				t.Fatalf("Add(%q): error without ErrBadPattern: %v", pats, err)
			}
			return
		}

		p := Policy{Parallelism: 1, Reverse: reverse, IgnoreOrder: mode&0x80 != 0}
		count := ((mode&0x7f)%5 + 5) % 5
		unmatched := slices.ContainsFunc(pats, func(p string) bool {
			return !slices.ContainsFunc(ids, func(id string) bool { return fuzzMatch(strings.TrimPrefix(p, "!"), id) })
		})
		shardOf := map[string]int{}
		for index := range max(count, 1) {
			sel, err := g.Select(&filter, index, count)
			if unmatched != (err != nil) {
				t.Fatalf("Select with %q = %v, some pattern matches nothing: %v", pats, err, unmatched)
			}
			if err != nil {
				named := slices.ContainsFunc(pats, func(p string) bool {
					return err.Error() == fmt.Sprintf("filter pattern matches no unit: %q", p)
				})
				if !errors.Is(err, ErrNoMatch) || !named {
					t.Fatalf("Select: unclear error %v", err)
				}
				return
			}
			for i, s := range sel {
				if !s {
					continue
				}
				if prev, dup := shardOf[ids[i]]; dup {
					t.Fatalf("%q on shards %d and %d", ids[i], prev, index)
				}
				shardOf[ids[i]] = index
			}
			fuzzCheckWaves(t, g, ids, sel, p)
		}
		for i, id := range ids {
			_, on := shardOf[id]
			if want := fuzzSelected(pats, id); want != on {
				t.Fatalf("%q: selected by %q %v, on a shard %v", id, pats, want, on)
			}
			for _, d := range deps[i] {
				sd, ok := shardOf[d]
				if on && ok && sd != shardOf[id] {
					t.Fatalf("edge %q -> %q crosses shards %d and %d", id, d, shardOf[id], sd)
				}
			}
		}
	})
}

// fuzzCheckWaves checks Waves and a sequential Run on one selection.
func fuzzCheckWaves(t *testing.T, g *Graph, ids []string, sel []bool, p Policy) {
	waves := g.Waves(sel, p)
	wave := map[string]int{}
	for w, ws := range waves {
		if len(ws) == 0 || !slices.IsSorted(ws) {
			t.Fatalf("wave %d is empty or unsorted: %q", w, waves)
		}
		for _, id := range ws {
			if _, dup := wave[id]; dup {
				t.Fatalf("%q planned twice: %q", id, waves)
			}
			wave[id] = w
		}
	}
	var order []int
	g.Run(context.Background(), sel, p, nil, func(_ context.Context, i int) error {
		order = append(order, i) // Parallelism 1: never concurrent
		return nil
	}, func(int, Outcome) {})
	pos := map[string]int{}
	for k, i := range order {
		pos[ids[i]] = k
	}
	reach := reachOf(g)
	for a := range ids {
		_, planned := wave[ids[a]]
		if _, ran := pos[ids[a]]; sel[a] != planned || sel[a] != ran {
			t.Fatalf("%q: selected %v, planned %v, ran %v", ids[a], sel[a], planned, ran)
		}
		if p.IgnoreOrder && planned && wave[ids[a]] != 0 {
			t.Fatalf("IgnoreOrder gave more than one wave: %q", waves)
		}
		for b := range ids {
			if !sel[a] || !sel[b] || !reach[a][b] || p.IgnoreOrder {
				continue
			}
			wa, wb, pa, pb := wave[ids[a]], wave[ids[b]], pos[ids[a]], pos[ids[b]]
			if p.Reverse {
				wa, wb, pa, pb = wb, wa, pb, pa
			}
			if wa <= wb || pa <= pb {
				t.Fatalf("%q depends on %q: waves %d, %d, starts %d, %d (reverse %v): %q", ids[a], ids[b],
					wave[ids[a]], wave[ids[b]], pos[ids[a]], pos[ids[b]], p.Reverse, waves)
			}
		}
	}
}

// fuzzProblem returns the sentinel New must wrap for these units, or nil
// when they are valid. Problems are checked in New's order: IDs first,
// then dependencies unit by unit, then cycles.
func fuzzProblem(ids []string, deps [][]string) error {
	idx := map[string]int{}
	for i, id := range ids {
		if id == "" || !utf8.ValidString(id) {
			return ErrInvalidUnit
		}
		for _, r := range id {
			if r < 0x20 || r >= 0x7f && r < 0xa0 || r == 0x2028 || r == 0x2029 {
				return ErrInvalidUnit
			}
		}
		if _, dup := idx[id]; dup {
			return ErrDuplicateUnit
		}
		idx[id] = i
	}
	for i, ds := range deps {
		for _, d := range ds {
			j, ok := idx[d]
			if !ok {
				return ErrUnknownDependency
			}
			if j == i {
				return ErrInvalidUnit
			}
		}
	}
	// Cyclic iff some unit reaches itself (Floyd-Warshall closure).
	n := len(ids)
	reach := make([][]bool, n)
	for a := range n {
		reach[a] = make([]bool, n)
		for _, d := range deps[a] {
			reach[a][idx[d]] = true
		}
	}
	for k := range n {
		for a := range n {
			for b := range n {
				reach[a][b] = reach[a][b] || reach[a][k] && reach[k][b]
			}
		}
	}
	for a := range n {
		if reach[a][a] {
			return ErrCycle
		}
	}
	return nil
}

// fuzzMatch is the filter's matching rule: the glob matches the whole ID.
func fuzzMatch(glob, id string) bool {
	m, _ := doublestar.Match(glob, id)
	return m
}

// fuzzSelected is the filter's selection rule.
func fuzzSelected(pats []string, id string) bool {
	included, anyInclude := false, false
	for _, p := range pats {
		if glob, neg := strings.CutPrefix(p, "!"); neg {
			if fuzzMatch(glob, id) {
				return false
			}
		} else {
			anyInclude = true
			included = included || fuzzMatch(glob, id)
		}
	}
	return included || !anyInclude
}
