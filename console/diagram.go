package console

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tendhq/tend/statemachine"
)

// diagram is a machine laid out for drawing: phases as boxes in layers, by
// their distance from the initial phase, and its phase changes as arrows.
type diagram struct {
	// MinX, Width and Height are the drawing's view box: curves may bend
	// left of the boxes.
	MinX, Width, Height int
	Nodes               []node
	Edges               []arrow
	// The arrow into the initial phase goes from (StartX, StartY) down to
	// StartToY.
	StartX, StartY, StartToY int
}

// node is one phase's box.
type node struct {
	Phase   string
	ID      string
	Kind    string // resting, transitional, terminal, fault
	Current bool
	// NoReturn marks a point of no return.
	NoReturn   bool
	X, Y, W, H int
	// TextX, TextY is where the phase's name is written.
	TextX, TextY int
	Steps        string // the steps of a transitional phase, for its tooltip
}

// arrow is one phase change.
type arrow struct {
	From, To string
	// Failure marks the change an operation makes when it is given up.
	Failure bool
	D       string // the SVG path
}

// Sizes of the layout, in SVG user units.
const (
	boxHeight = 32
	boxMinW   = 84
	charW     = 8 // a generous width of one character of the boxes' font
	gapX      = 28
	gapY      = 56
	margin    = 24
)

// layout lays m out with current as the phase highlighted.
func layout(m *statemachine.Machine[string, string], current string) diagram {
	phases := m.Phases()
	edges := m.Edges()
	index := make(map[string]int, len(phases))
	for i, p := range phases {
		index[p] = i
	}
	// Layers: breadth first from the initial phase; phases it never reaches
	// go on a last layer of their own.
	layer := make([]int, len(phases))
	for i := range layer {
		layer[i] = -1
	}
	queue := []int{index[m.Initial()]}
	layer[queue[0]] = 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, e := range edges {
			if e.From != phases[i] {
				continue
			}
			if j := index[e.To]; layer[j] < 0 {
				layer[j] = layer[i] + 1
				queue = append(queue, j)
			}
		}
	}
	last := slices.Max(layer)
	for i := range layer {
		if layer[i] < 0 {
			layer[i] = last + 1
		}
	}
	layers := make([][]int, slices.Max(layer)+1)
	for i, l := range layer {
		layers[l] = append(layers[l], i)
	}

	d := diagram{Nodes: make([]node, len(phases))}
	widths := make([]int, len(layers))
	for l, members := range layers {
		for k, i := range members {
			w := max(boxMinW, charW*len([]rune(phases[i]))+24)
			d.Nodes[i].W = w
			widths[l] += w
			if k > 0 {
				widths[l] += gapX
			}
		}
	}
	d.Width = slices.Max(widths) + 2*margin
	for l, members := range layers {
		x := margin + (d.Width-2*margin-widths[l])/2
		for _, i := range members {
			n := &d.Nodes[i]
			spec, _ := m.Spec(phases[i])
			n.Phase, n.ID, n.Kind = phases[i], "phase-"+strings.Join(strings.Fields(phases[i]), "_"), spec.Type.String()
			n.Current, n.NoReturn, n.Steps = phases[i] == current, spec.NoReturn, strings.Join(spec.Steps, ", ")
			n.X, n.Y, n.H = x, margin+boxHeight+l*(boxHeight+gapY), boxHeight
			n.TextX, n.TextY = n.X+n.W/2, n.Y+boxHeight/2+5
			x += n.W + gapX
		}
	}
	d.Height = margin + boxHeight + len(layers)*(boxHeight+gapY) - gapY + margin
	init := d.Nodes[index[m.Initial()]]
	d.StartX, d.StartY, d.StartToY = init.X+init.W/2, init.Y-boxHeight+6, init.Y

	for _, e := range edges {
		from, to := d.Nodes[index[e.From]], d.Nodes[index[e.To]]
		spec, _ := m.Spec(e.From)
		a := arrow{From: e.From, To: e.To, Failure: spec.Type == statemachine.Transitional && spec.FailTo == e.To && spec.Then != e.To}
		var bend int
		a.D, bend = path(from, to)
		d.MinX = min(d.MinX, bend-margin/2)
		d.Width = max(d.Width, bend+margin/2)
		d.Edges = append(d.Edges, a)
	}
	d.Width -= d.MinX
	return d
}

// path returns the SVG path of an arrow from box a to box b: down to a
// lower layer, straight across within one, else a curve out of a's side
// into b's; and the x coordinate of its bend.
func path(a, b node) (string, int) {
	if b.Y > a.Y {
		x1, y1 := a.X+a.W/2, a.Y+a.H
		x2, y2 := b.X+b.W/2, b.Y
		return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1, y1+gapY/2, x2, y2-gapY/2, x2, y2), x1
	}
	if b.Y == a.Y && a.X != b.X { // the same layer: side to side
		// Rightwards above the middle, leftwards below, so that arrows
		// both ways between two boxes do not overlap.
		x1, x2, y := a.X+a.W, b.X, a.Y+a.H/2-4
		if b.X < a.X {
			x1, x2, y = a.X, b.X+b.W, a.Y+a.H/2+4
		}
		return fmt.Sprintf("M%d %d L%d %d", x1, y, x2, y), x1
	}
	// Up: leave from a side and bend outwards, so the curve does not
	// cross the boxes between.
	x1, y1 := a.X+a.W, a.Y+a.H/2
	x2, y2 := b.X+b.W, b.Y+b.H/2
	bend := max(x1, x2) + gapX + (a.Y-b.Y)/4
	if b.X+b.W/2 < a.X+a.W/2 || (b.X == a.X && b.Y == a.Y) {
		x1, x2 = a.X, b.X
		bend = min(x1, x2) - gapX - (a.Y-b.Y)/4
	}
	return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, bend, y1, bend, y2, x2, y2), bend
}
