package phasegraph

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

func all(Edge) bool { return true }

func TestMerge(t *testing.T) {
	var g Graph
	g.Merge(0, 1, Rule, 2)
	g.Merge(0, 1, Rule, 3)
	g.Merge(0, 1, Abort, 4)
	g.Merge(1, 2, Completion, -1)
	g.Merge(1, 2, Completion, -1)
	want := Graph{
		{From: 0, To: 1, Kind: Rule, States: []int{2, 3}},
		{From: 0, To: 1, Kind: Abort, States: []int{4}},
		{From: 1, To: 2, Kind: Completion},
	}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("graph %v, want %v", g, want)
	}
}

func TestReachAndPathBack(t *testing.T) {
	// 0 → 1 → 2 → 0, 2 -failure→ 3, 4 alone.
	g := Graph{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 0}, {From: 2, To: 3, Kind: Failure}}
	if got := slices.Sorted(maps.Keys(g.Reach([]int{0}, all))); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("reach %v", got)
	}
	noFailure := func(e Edge) bool { return e.Kind != Failure }
	if got := g.Reach([]int{0}, noFailure); got[3] || got[4] {
		t.Fatalf("reach over edges not accepted: %v", got)
	}
	if got := g.PathBack(1, all); !slices.Equal(got, []int{1, 2, 0, 1}) {
		t.Fatalf("path back %v", got)
	}
	if got := g.PathBack(3, all); got != nil {
		t.Fatalf("path back from a sink %v", got)
	}
	if got := g.PathBack(1, func(e Edge) bool { return e.To != 0 }); got != nil {
		t.Fatalf("path back over a refused edge %v", got)
	}
}

func TestDeadEnd(t *testing.T) {
	path := func(p []int) string { return fmt.Sprint(p) }
	walk := func(moves map[int][]Move, dead map[int]string, ends ...int) Walk {
		return Walk{
			Next: func(n int) ([]Move, string) { return moves[n], dead[n] },
			End:  func(n int) bool { return slices.Contains(ends, n) },
			Path: path,
		}
	}
	for _, c := range []struct {
		name  string
		w     Walk
		path  []int
		why   string
		start int
	}{
		{name: "reaches an end", w: walk(map[int][]Move{0: {{To: 1}}, 1: {{To: 2}}}, nil, 2)},
		{name: "a dead end", w: walk(map[int][]Move{0: {{To: 1}}}, map[int]string{1: "stuck"}, 2),
			path: []int{0, 1}, why: "stuck"},
		{name: "no end reachable", w: walk(map[int][]Move{0: {{To: 1}}, 1: {{To: 0}}}, nil, 2),
			path: []int{0}, why: "loops without settling"},
		{name: "a loop of required moves", w: walk(map[int][]Move{0: {{To: 1}}, 1: {{To: 2}, {To: 3}}, 2: {{To: 1}}}, nil, 3),
			path: []int{0, 1}, why: "loops without settling: [1 2 1]"},
		{name: "a loop through an optional move", w: walk(map[int][]Move{0: {{To: 1}}, 1: {{To: 0, Optional: true}, {To: 2}}}, nil, 2)},
		{name: "optional moves from an end", w: walk(map[int][]Move{0: {{To: 1, Optional: true}}, 1: {{To: 0}}}, nil, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, why := c.w.DeadEnd(c.start)
			if !slices.Equal(p, c.path) || why != c.why {
				t.Fatalf("DeadEnd = %v, %q; want %v, %q", p, why, c.path, c.why)
			}
		})
	}
}
