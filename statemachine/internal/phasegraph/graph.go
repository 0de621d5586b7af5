package phasegraph

import "slices"

// Kind classifies the edges of the phase graph.
type Kind int

// The kinds of edges.
const (
	Rule Kind = iota
	Completion
	Failure // a terminal step failure, to the Fault phase
	Abort   // an abort, for the edge's states
	Drift   // a drift repair
	Request // a request served, named by the edge's name
	Timer   // a timer, named by the edge's name
)

// Edge is one edge of the phase graph, by phase index.
type Edge struct {
	From, To int
	Kind     Kind
	States   []int  // the states of a rule or abort edge
	Name     string // the request or timer of its edge
}

// Graph is the edges of the phase graph, in the order they were added.
type Graph []Edge

// Merge adds the edge from → to of kind for state (none when state is
// negative), or adds state to the edge of that kind between those phases
// when there is one already.
func (g *Graph) Merge(from, to int, kind Kind, state int) {
	for i := range *g {
		e := &(*g)[i]
		if e.From == from && e.To == to && e.Kind == kind {
			if state >= 0 {
				e.States = append(e.States, state)
			}
			return
		}
	}
	e := Edge{From: from, To: to, Kind: kind}
	if state >= 0 {
		e.States = []int{state}
	}
	*g = append(*g, e)
}

// Reach returns the phases reachable from start (included) over the edges
// ok accepts.
func (g Graph) Reach(start []int, ok func(Edge) bool) map[int]bool {
	seen := map[int]bool{}
	queue := slices.Clone(start)
	for _, s := range start {
		seen[s] = true
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range g {
			if e.From == cur && ok(e) && !seen[e.To] {
				seen[e.To] = true
				queue = append(queue, e.To)
			}
		}
	}
	return seen
}

// PathBack returns a shortest path from n back to n over the edges ok
// accepts, n at both ends, or nil when there is none.
func (g Graph) PathBack(n int, ok func(Edge) bool) []int {
	prev := map[int]int{}
	queue := []int{n}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range g {
			if e.From != cur || !ok(e) {
				continue
			}
			if e.To == n {
				path := []int{n}
				for at := cur; at != n; at = prev[at] {
					path = append(path, at)
				}
				path = append(path, n)
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[e.To]; !seen {
				prev[e.To] = cur
				queue = append(queue, e.To)
			}
		}
	}
	return nil
}
