package runner

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/queue"
)

// selection validates the graph and applies the Run's shard, filters,
// exact IDs and dependents, in that order.
func (c *runConfig) selection(units []Unit) (*queue.Graph, []bool, error) {
	ids := make([]string, len(units))
	deps := make([][]string, len(units))
	for i := range units {
		ids[i] = units[i].id()
		deps[i] = units[i].DependsOn
	}
	g, err := queue.New(ids, deps)
	if err != nil {
		return nil, nil, err
	}
	sel, err := g.Select(&c.filter, c.shardIndex, c.shardCount)
	if err != nil {
		return nil, nil, err
	}
	if c.ids != nil {
		chosen := make([]bool, g.Len())
		for _, id := range c.ids {
			i, ok := g.Index(id)
			if !ok {
				return nil, nil, fmt.Errorf("%w: WithIDs: no unit has the ID %q", ErrNoMatch, id)
			}
			chosen[i] = true
		}
		for i := range sel {
			sel[i] = sel[i] && chosen[i]
		}
	}
	if c.dependents {
		addDependents(g, sel)
	}
	return g, sel, nil
}

// addDependents selects every unit that depends, directly or through
// others, on a selected one.
func addDependents(g *queue.Graph, sel []bool) {
	users := make([][]int, g.Len()) // users[d]: the units that depend on d
	for i := range g.Len() {
		for _, d := range g.Deps(i) {
			users[d] = append(users[d], i)
		}
	}
	var todo []int
	for i, s := range sel {
		if s {
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, u := range users[d] {
			if !sel[u] {
				sel[u] = true
				todo = append(todo, u)
			}
		}
	}
}
