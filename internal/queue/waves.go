package queue

// Policy is how Run schedules the selected units. The zero value is not
// usable as is: set Parallelism.
type Policy struct {
	// Parallelism is the most units run at once; values below 1 mean 1.
	Parallelism int
	// Reverse flips every dependency edge (destroy order): a unit waits
	// for the units that depend on it.
	Reverse bool
	// IgnoreOrder makes every selected unit eligible at once, whatever
	// its dependencies.
	IgnoreOrder bool
	// FailFast stops the run at the first failure: nothing new starts,
	// and the context of the running units is cancelled with a cause
	// wrapping ErrFailFast that names the failed unit. It wins over
	// IgnoreErrors.
	FailFast bool
	// IgnoreErrors lets the dependents of a failed unit run anyway.
	IgnoreErrors bool
	// Admit, when set, is asked whether the next ready unit (in ID
	// order) may start now, with how many units run; a true answer
	// means it starts. While it says no and other units run, nothing
	// else starts (no unit overtakes another) and it is asked again once
	// a unit ends. With no unit running the unit starts whatever the
	// answer, so admission never waits for anything but running units.
	// Run calls it from its own goroutine, never concurrently with
	// itself, but concurrently with the run functions of running units.
	Admit func(i, running int) bool
}

// Waves is the dry run of Run: the selected units (sel from Select; nil
// means all) grouped so that every unit waits only for units of earlier
// waves, IDs sorted inside a wave. Under Reverse the edges flip, under
// IgnoreOrder there is one wave. A path of dependencies through unselected
// units still orders its selected ends. Nothing selected gives nil.
//
// Run does not wait for whole waves (a unit starts as soon as what it
// waits for is done); waves are the order it honours, grouped for
// display.
func (g *Graph) Waves(sel []bool, p Policy) [][]string {
	sel = g.selection(sel)
	before := g.waitsFor(sel, p)
	level := make([]int, len(g.ids)) // 1-based wave of each selected unit, 0 = not yet known
	var out [][]string
	// Visiting in topological order (dependencies first) lets one pass
	// compute every level without recursion.
	for _, i := range g.topo(sel, before) {
		l := 1
		for _, b := range before[i] {
			l = max(l, level[b]+1)
		}
		level[i] = l
		for len(out) < l {
			out = append(out, nil)
		}
	}
	for _, i := range g.sorted() {
		if sel[i] {
			out[level[i]-1] = append(out[level[i]-1], g.ids[i])
		}
	}
	return out
}

// topo returns the selected units ordered so that every unit comes after
// the units it waits for (before), ties broken by ID.
func (g *Graph) topo(sel []bool, before [][]int) []int {
	remaining := make([]int, len(g.ids))
	after := make([][]int, len(g.ids))
	var order, ready []int
	for _, i := range g.sorted() {
		if !sel[i] {
			continue
		}
		remaining[i] = len(before[i])
		for _, b := range before[i] {
			after[b] = append(after[b], i)
		}
		if remaining[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, a := range after[i] {
			if remaining[a]--; remaining[a] == 0 {
				ready = append(ready, a)
			}
		}
	}
	return order
}
