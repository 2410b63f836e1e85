package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// spec splits "id" or "id:dep1,dep2" specs into New's arguments.
func spec(specs ...string) ([]string, [][]string) {
	ids := make([]string, len(specs))
	deps := make([][]string, len(specs))
	for i, s := range specs {
		id, ds, _ := strings.Cut(s, ":")
		ids[i] = id
		if ds != "" {
			deps[i] = strings.Split(ds, ",")
		}
	}
	return ids, deps
}

// mkGraph builds a graph from specs and fails the test if it is invalid.
func mkGraph(t testing.TB, specs ...string) *Graph {
	t.Helper()
	g, err := New(spec(specs...))
	require.NoError(t, err)
	return g
}

// ids returns the IDs of the given unit indexes.
func (g *Graph) idsOf(is []int) []string {
	out := make([]string, len(is))
	for k, i := range is {
		out[k] = g.ID(i)
	}
	return out
}

func TestNewValidation(t *testing.T) {
	cases := []struct {
		name  string
		specs []string
		want  error
		msg   string
	}{
		{"cycle", []string{"a:b", "b:c", "c:a", "d"}, ErrCycle, "dependency cycle: a -> b -> c -> a"},
		{"two cycle", []string{"a:b", "b:a"}, ErrCycle, "dependency cycle: a -> b -> a"},
		{"cycle below", []string{"top:x", "x:y", "y:z", "z:x"}, ErrCycle, "x -> y -> z -> x"},
		{"self", []string{"a", "b:a,b"}, ErrInvalidUnit, `invalid unit: unit "b" depends on itself`},
		{"duplicate", []string{"a", "b", "a"}, ErrDuplicateUnit, `duplicate unit id: "a" (units 0 and 2)`},
		{"unknown dep", []string{"a:ghost"}, ErrUnknownDependency, `unknown dependency: unit "a" depends on "ghost", which is not among the units`},
		{"empty id", []string{"a", ""}, ErrInvalidUnit, "unit 1 has an empty id"},
		{"newline in id", []string{"a", "prod/db\n[prod/x] Destroy complete!"}, ErrInvalidUnit, `unit 1: id "prod/db\n[prod/x] Destroy complete!" contains the control character U+000A`},
		{"escape in id", []string{"a\x1b[2Kb"}, ErrInvalidUnit, "U+001B"},
		{"C1 control in id", []string{"a\u0085b"}, ErrInvalidUnit, "U+0085"},
		{"line separator in id", []string{"a\u2028b"}, ErrInvalidUnit, "U+2028"},
		{"invalid UTF-8 id", []string{"a\xffb"}, ErrInvalidUnit, "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(spec(tc.specs...))
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			require.Nil(t, g)
		})
	}
	_, err := New([]string{"a"}, [][]string{nil, {"a"}})
	require.ErrorIs(t, err, ErrInvalidUnit)
	require.ErrorContains(t, err, "dependencies given for 2 units, but there are 1")
}

func TestGraphAccessors(t *testing.T) {
	ids, deps := spec("app:db,cache,db", "db:vpc", "vpc", "cache:vpc")
	g, err := New(ids, deps)
	require.NoError(t, err)
	ids[0] = "mutated" // the graph keeps its own copy
	require.Equal(t, 4, g.Len())
	require.Equal(t, "app", g.ID(0))
	i, ok := g.Index("cache")
	require.True(t, ok)
	require.Equal(t, 3, i)
	_, ok = g.Index("mutated")
	require.False(t, ok)
	require.Equal(t, []string{"cache", "db"}, g.idsOf(g.Deps(0)), "sorted by ID, repeats dropped")
	require.Empty(t, g.Deps(2))
	d := g.Deps(0)
	d[0] = 2
	require.Equal(t, []string{"cache", "db"}, g.idsOf(g.Deps(0)), "Deps returns a copy")

	empty, err := New(nil, nil)
	require.NoError(t, err)
	require.Zero(t, empty.Len())
	require.Nil(t, empty.Waves(nil, Policy{Parallelism: 1}))
	require.Empty(t, empty.Run(t.Context(), nil, Policy{Parallelism: 1}, nil,
		func(context.Context, int) error { return nil }, func(int, Outcome) {}))
}

// TestLongChain checks that validation and planning do not recurse per
// unit: a chain of many units neither overflows nor takes quadratic memory.
func TestLongChain(t *testing.T) {
	const n = 20000
	ids := make([]string, n)
	deps := make([][]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%05d", i)
		if i > 0 {
			deps[i] = []string{ids[i-1]}
		}
	}
	g, err := New(ids, deps)
	require.NoError(t, err)
	waves := g.Waves(nil, Policy{Parallelism: 1})
	require.Len(t, waves, n)
	require.Equal(t, []string{"u00000"}, waves[0])

	deps[0] = []string{ids[n-1]} // close the loop
	_, err = New(ids, deps)
	require.ErrorIs(t, err, ErrCycle)
	msg := err.Error()
	require.True(t, strings.HasPrefix(msg, "dependency cycle: u00000 -> u19999 -> u19998 -> "), msg[:80])
	require.True(t, strings.HasSuffix(msg, " -> u00001 -> u00000"), msg[len(msg)-80:])
}
