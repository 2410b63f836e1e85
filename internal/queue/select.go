package queue

import "fmt"

// Select returns which units take part in a run, indexed like the graph:
// those on shard shardIndex of shardCount that pass the filter f (nil
// selects every unit).
//
// Sharding is computed over all units before filtering, so a unit's shard
// never depends on the filter: connected components of the dependency
// graph are never split, shards are balanced by unit count, and the split
// is deterministic (it depends only on the IDs and edges). shardCount <= 1
// means no sharding; shardIndex must then be 0, and otherwise lie in
// [0, shardCount) (ErrBadShard).
//
// Every pattern of f, include or exclude, must match at least one unit of
// the whole graph (whatever the shard); one that matches none is an error
// wrapping ErrNoMatch that names it, so a mistyped exclude never silently
// means "everything".
func (g *Graph) Select(f *Filter, shardIndex, shardCount int) ([]bool, error) {
	if shardIndex < 0 || shardIndex >= max(shardCount, 1) {
		return nil, fmt.Errorf("%w: index %d of %d shards", ErrBadShard, shardIndex, shardCount)
	}
	if p, ok := f.unmatched(g.ids); ok {
		return nil, fmt.Errorf("%w: %q", ErrNoMatch, p.raw)
	}
	var shard []int
	if shardCount > 1 {
		shard = g.shards(shardCount)
	}
	sel := make([]bool, len(g.ids))
	for i, id := range g.ids {
		sel[i] = (shard == nil || shard[i] == shardIndex) && f.match(id)
	}
	return sel, nil
}
