package console

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tendhq/tend/statemachine"
)

// ring is a machine of n resting phases and a transitional phase between
// each two, in a ring, with a Fault phase: long enough for several layers,
// with edges up, down and across.
func ring(t *testing.T) *statemachine.Machine[string, string] {
	t.Helper()
	def := statemachine.Definition[string, string]{
		Name: "Ring", States: []string{"A", "B", "C"}, Initial: "AtA",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "AtA"}, {Phase: "AtB"}, {Phase: "AtC"},
			{Phase: "ToB", Type: statemachine.Transitional, Steps: []string{"go"}, Completion: []statemachine.Require{statemachine.Is("there")}, Then: "AtB"},
			{Phase: "ToC", Type: statemachine.Transitional, Steps: []string{"go"}, Completion: []statemachine.Require{statemachine.Is("there")}, Then: "AtC"},
			{Phase: "To A again", Type: statemachine.Transitional, Steps: []string{"go"}, Completion: []statemachine.Require{statemachine.Is("there")}, Then: "AtA"},
			{Phase: "Fault", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "A", Phase: "AtA"}, {State: "B", Phase: "AtB"}, {State: "C", Phase: "AtC"}},
		Rules: []statemachine.Rule[string, string]{
			{State: "B", Phase: "AtA", Begin: "ToB"}, {State: "C", Phase: "AtA", Begin: "ToB"},
			{State: "C", Phase: "AtB", Begin: "ToC"}, {State: "A", Phase: "AtB", Begin: "ToC"},
			{State: "A", Phase: "AtC", Begin: "To A again"}, {State: "B", Phase: "AtC", Begin: "To A again"},
			{State: "A", Phase: "Fault", Begin: "To A again"}, {State: "B", Phase: "Fault", Begin: "ToB"}, {State: "C", Phase: "Fault", Begin: "ToC"},
		},
	}
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLayout(t *testing.T) {
	m := ring(t)
	d := layout(m, "ToC")
	if len(d.Nodes) != len(m.Phases()) {
		t.Fatalf("%d nodes for %d phases", len(d.Nodes), len(m.Phases()))
	}
	current := 0
	for i, a := range d.Nodes {
		if a.Phase != m.Phases()[i] {
			t.Errorf("node %d is %q, want %q", i, a.Phase, m.Phases()[i])
		}
		if a.Current {
			current++
			if a.Phase != "ToC" {
				t.Errorf("%s is highlighted", a.Phase)
			}
		}
		if a.X < d.MinX || a.Y < 0 || a.X+a.W > d.MinX+d.Width || a.Y+a.H > d.Height {
			t.Errorf("%s at (%d,%d) %dx%d is outside the view box %d %d %d", a.Phase, a.X, a.Y, a.W, a.H, d.MinX, d.Width, d.Height)
		}
		for _, b := range d.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%s and %s overlap", a.Phase, b.Phase)
			}
		}
	}
	if current != 1 {
		t.Errorf("%d phases highlighted, want 1", current)
	}
	if len(d.Edges) != len(m.Edges()) {
		t.Errorf("%d arrows for %d edges", len(d.Edges), len(m.Edges()))
	}
	failures := 0
	for _, e := range d.Edges {
		if e.Failure {
			failures++
			if e.To != "Fault" {
				t.Errorf("the arrow %s → %s is drawn as a failure", e.From, e.To)
			}
		}
	}
	if failures != 3 {
		t.Errorf("%d failure arrows, want one per transitional phase (3)", failures)
	}
	if d.Nodes[0].Y >= d.Nodes[3].Y || d.Nodes[3].Y >= d.Nodes[1].Y {
		t.Error("the layers do not follow the distance from the initial phase (AtA, ToB, AtB)")
	}
}

func TestDiagramTemplate(t *testing.T) {
	pages, err := parsePages("/")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pages["object"].ExecuteTemplate(&buf, "diagram", layout(ring(t), "To A again")); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{
		`<g id="phase-To_A_again" class="node kind-transitional current" data-phase="To A again">`,
		`<g id="phase-AtA" class="node kind-resting" data-phase="AtA">`,
		`<g id="phase-Fault" class="node kind-fault" data-phase="Fault">`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s in\n%s", want, svg)
		}
	}
	if n := len(regexp.MustCompile(`<path class="edge[^"]*" data-from`).FindAllString(svg, -1)); n != len(ring(t).Edges()) {
		t.Errorf("%d arrows drawn", n)
	}
}
