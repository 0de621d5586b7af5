package phasegraph

import "slices"

// Move is a move of a [Walk] to phase To; Optional is set when the machine
// may take it but never needs to (a failure, a drift repair, a request, a
// timer).
type Move struct {
	To       int
	Optional bool
}

// Walk is the moves a machine makes from phase to phase with one intent
// held constant.
type Walk struct {
	// Next returns the moves phase n allows, or the reason n is a dead end.
	// At an end it returns only optional moves.
	Next func(n int) ([]Move, string)
	// End reports whether the walk is at an end in phase n.
	End func(n int) bool
	// Path names a path of phases, for the reason of a loop.
	Path func(path []int) string
}

// DeadEnd explores every phase reachable from start. It returns the path
// to the first phase that is a dead end, from which no end can be reached,
// or that lies on a loop the machine takes with no optional move, with
// why; "" when there is none. A loop through an optional move (a retry
// after a failure, a periodic timer) is no hole: it is taken only when the
// world makes it.
func (w Walk) DeadEnd(start int) ([]int, string) {
	prev := map[int]int{start: start}
	order := []int{start}
	succ := map[int][]Move{}
	dead := map[int]string{}
	for i := 0; i < len(order); i++ {
		n := order[i]
		out, why := w.Next(n)
		if why != "" {
			dead[n] = why
		}
		succ[n] = out
		for _, o := range out {
			if _, seen := prev[o.To]; !seen {
				prev[o.To] = n
				order = append(order, o.To)
			}
		}
	}
	path := func(n int) []int {
		var p []int
		for at := n; ; at = prev[at] {
			p = append(p, at)
			if at == start {
				break
			}
		}
		slices.Reverse(p)
		return p
	}
	for _, n := range order {
		if why, ok := dead[n]; ok {
			return path(n), why
		}
	}
	// good: an end is reachable from the phase.
	good := map[int]bool{}
	for changed := true; changed; {
		changed = false
		for _, n := range order {
			if !good[n] && (w.End(n) || slices.ContainsFunc(succ[n], func(o Move) bool { return good[o.To] })) {
				good[n], changed = true, true
			}
		}
	}
	for _, n := range order {
		if !good[n] {
			return path(n), "loops without settling"
		}
	}
	// A loop of required moves: depth-first over them, ends excluded.
	const (
		unseen = iota
		open
		closed
	)
	color := map[int]int{}
	var loop []int
	var visit func(n int) bool
	visit = func(n int) bool {
		color[n] = open
		loop = append(loop, n)
		for _, o := range succ[n] {
			if o.Optional || w.End(o.To) {
				continue
			}
			switch color[o.To] {
			case open:
				i := slices.Index(loop, o.To)
				loop = append(loop[i:], o.To)
				return true
			case unseen:
				if visit(o.To) {
					return true
				}
			}
		}
		loop = loop[:len(loop)-1]
		color[n] = closed
		return false
	}
	for _, n := range order {
		if color[n] == unseen && !w.End(n) && visit(n) {
			return path(loop[0]), "loops without settling: " + w.Path(loop)
		}
	}
	return nil, ""
}
