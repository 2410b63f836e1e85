package runner

import (
	"errors"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/tfisolate/tfisolate/workdir"
)

// FuzzPlan builds unit sets from arbitrary IDs, dependency edges and a
// filter pattern, and checks the dry run against its definition: an error
// wrapping one of the package's sentinels, or waves in which every
// selected unit appears exactly once, each wave is sorted and non-empty,
// and every selected unit comes after the selected units it depends on
// (directly or through unselected ones), before them for Destroy.
func FuzzPlan(f *testing.F) {
	f.Add("a,b,c", []byte{1, 0, 2, 1}, "", false)
	f.Add("a,b,c", []byte{0, 1, 1, 2, 2, 0}, "", false)
	f.Add("a,a", []byte{}, "", false)
	f.Add("a,,b", []byte{}, "", false)
	f.Add("a,b", []byte{0, 0}, "", false)
	f.Add("s/x,s/y,t/z", []byte{0, 1, 1, 2}, "s/*", true)
	f.Add("s/x,s/y,t/z", []byte{0, 2, 2, 1}, "!t/*", false)
	f.Add("a,b", []byte{0, 9}, "[", false)
	f.Add("a", []byte{}, "!", false)
	wds, err := workdir.New(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, idList string, edges []byte, pattern string, destroy bool) {
		ids := strings.Split(idList, ",")
		if len(ids) > 12 {
			ids = ids[:12]
		}
		units := make([]Unit, len(ids))
		for i, id := range ids {
			units[i].ID = id
		}
		// Edge (a, b): unit a depends on unit b; an index past the units
		// names a unit that does not exist.
		for k := 0; k+1 < len(edges) && k < 64; k += 2 {
			a, b := int(edges[k])%len(ids), int(edges[k+1])
			dep := "missing"
			if b < len(ids) {
				dep = ids[b]
			}
			units[a].DependsOn = append(units[a].DependsOn, dep)
		}
		opts := []Option{WithWorkdirs(wds), WithTerraform(os.Args[0])}
		if pattern != "" {
			opts = append(opts, WithFilter(pattern))
		}
		r, err := New(opts...)
		if err != nil {
			if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "pattern") {
				t.Fatalf("New with filter %q: unclear error %v", pattern, err)
			}
			return
		}
		cmd := Apply
		if destroy {
			cmd = Destroy
		}
		waves, err := r.Plan(cmd, units...)
		if err != nil {
			for _, s := range []error{ErrInvalidUnit, ErrDuplicateUnit, ErrUnknownDependency, ErrCycle} {
				if errors.Is(err, s) {
					if errors.Is(err, ErrCycle) && fuzzAcyclic(ids, units) {
						t.Fatalf("%v for an acyclic graph", err)
					}
					return
				}
			}
			t.Fatalf("Plan: error without a sentinel: %v", err)
		}
		if !fuzzAcyclic(ids, units) {
			t.Fatalf("Plan accepted a cycle: %v", units)
		}
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
		for _, id := range ids {
			_, planned := wave[id]
			if sel := fuzzSelected(pattern, id); sel != planned {
				t.Fatalf("%q: selected by %q %v, planned %v: %q", id, pattern, sel, planned, waves)
			}
		}
		// reach[a][b]: a depends on b, directly or through others.
		reach := fuzzClosure(ids, units)
		for a := range ids {
			for b := range ids {
				wa, okA := wave[ids[a]]
				wb, okB := wave[ids[b]]
				if !okA || !okB || !reach[a][b] {
					continue
				}
				if !destroy && wa <= wb || destroy && wa >= wb {
					t.Fatalf("%q depends on %q but is planned in wave %d vs %d (destroy %v): %q", ids[a], ids[b], wa, wb, destroy, waves)
				}
			}
		}
	})
}

// fuzzSelected is the filter's definition, for a single pattern.
func fuzzSelected(pattern, id string) bool {
	if pattern == "" {
		return true
	}
	if p, ok := strings.CutPrefix(pattern, "!"); ok {
		m, _ := path.Match(p, id)
		return !m
	}
	m, _ := path.Match(pattern, id)
	return m
}

func fuzzIndex(ids []string) map[string]int {
	m := map[string]int{}
	for i, id := range ids {
		m[id] = i
	}
	return m
}

func fuzzClosure(ids []string, units []Unit) [][]bool {
	idx := fuzzIndex(ids)
	reach := make([][]bool, len(ids))
	for a := range ids {
		reach[a] = make([]bool, len(ids))
		for _, d := range units[a].DependsOn {
			if b, ok := idx[d]; ok {
				reach[a][b] = true
			}
		}
	}
	for k := range ids {
		for a := range ids {
			for b := range ids {
				if reach[a][k] && reach[k][b] {
					reach[a][b] = true
				}
			}
		}
	}
	return reach
}

// fuzzAcyclic reports whether the dependencies (valid IDs only) have no cycle.
func fuzzAcyclic(ids []string, units []Unit) bool {
	reach := fuzzClosure(ids, units)
	for a := range ids {
		if reach[a][a] {
			return false
		}
	}
	return true
}
