package drivertest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tendhq/tend/statemachine"
)

// coverage counts what the runs of one test exercised: runs, actions,
// distinct states, (intent, phase) pairs, machine edges and steps that
// failed a call.
type coverage struct {
	mu      sync.Mutex // guards the fields below
	runs    int
	actions int
	states  map[string]bool
	pairs   map[string]bool
	edges   map[string]bool           // "From → To"
	faulted map[string]bool           // steps
	issued  map[statemachine.Verb]int // operator commands written, by verb
	applied map[statemachine.Verb]int // operator commands the driver carried out (not refused), by verb
}

func newCoverage() *coverage {
	return &coverage{states: map[string]bool{}, pairs: map[string]bool{}, edges: map[string]bool{}, faulted: map[string]bool{},
		issued: map[statemachine.Verb]int{}, applied: map[statemachine.Verb]int{}}
}

// issue counts an operator command written.
func (c *coverage) issue(v statemachine.Verb) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.issued[v]++
}

// carried counts the operator commands a write carried out.
func (c *coverage) carried(outcomes []statemachine.CommandOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outcomes {
		if o.Applied {
			c.applied[o.Command.Verb]++
		}
	}
}

// add counts one run: its actions, the state it reached, and what its
// watch and steps saw.
func (c *coverage) add(actions int, state string, seen *coverage) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	c.actions += actions
	c.states[state] = true
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, m := range []struct{ to, from map[string]bool }{{c.pairs, seen.pairs}, {c.edges, seen.edges}, {c.faulted, seen.faulted}} {
		for k := range m.from {
			m.to[k] = true
		}
	}
	for v, n := range seen.issued {
		c.issued[v] += n
	}
	for v, n := range seen.applied {
		c.applied[v] += n
	}
}

// edgeName names an edge of the coverage.
func edgeName[P comparable](from, to P) string { return fmt.Sprintf("%v → %v", from, to) }

// moved counts a phase move of one status write: the machine's edge, or
// the edges of a shortest path through phases that run no step.
func moved[S, P comparable](c *coverage, m *statemachine.Machine[S, P], from, to P) {
	next := map[P][]P{}
	for _, e := range m.Edges() {
		next[e.From] = append(next[e.From], e.To)
	}
	prev := map[P]P{}
	todo, seen := []P{from}, map[P]bool{from: true}
	for len(todo) > 0 && !seen[to] {
		p := todo[0]
		todo = todo[1:]
		for _, q := range next[p] {
			if !seen[q] {
				seen[q], prev[q] = true, p
				todo = append(todo, q)
			}
		}
	}
	if !seen[to] {
		return // no edge: the watch reports it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := to; p != from; p = prev[p] {
		c.edges[edgeName(prev[p], p)] = true
	}
}

// missing returns the declared edges and steps of m no run exercised.
func missing[S, P comparable](c *coverage, m *statemachine.Machine[S, P]) (edges, steps []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range m.Edges() {
		if n := edgeName(e.From, e.To); !c.edges[n] {
			edges = append(edges, n)
		}
	}
	for _, s := range m.Steps() {
		if !c.faulted[s] {
			steps = append(steps, s)
		}
	}
	return edges, steps
}

// line describes the coverage of m's tests in one line.
func line[S, P comparable](c *coverage, m *statemachine.Machine[S, P]) string {
	edges, steps := missing(c, m)
	c.mu.Lock()
	defer c.mu.Unlock()
	out := fmt.Sprintf("drivertest: %d runs, %d actions, %d distinct states, %d (intent, phase) pairs, edges covered %d of %d, steps faulted %d of %d",
		c.runs, c.actions, len(c.states), len(c.pairs), len(m.Edges())-len(edges), len(m.Edges()), len(m.Steps())-len(steps), len(m.Steps()))
	if len(c.issued) > 0 {
		var parts []string
		for _, v := range []statemachine.Verb{statemachine.VerbRetry, statemachine.VerbSkip, statemachine.VerbMove} {
			parts = append(parts, fmt.Sprintf("%s %d (%d carried out)", v, c.issued[v], c.applied[v]))
		}
		out += fmt.Sprintf(", operator commands %s, request %d", strings.Join(parts, ", "), c.issued[statemachine.VerbRequest])
	}
	return out
}

// uncovered describes what RequireCoverage reports, or "" when nothing is
// missing.
func uncovered[S, P comparable](c *coverage, m *statemachine.Machine[S, P]) string {
	edges, steps := missing(c, m)
	var parts []string
	if len(edges) > 0 {
		parts = append(parts, "edges never taken: "+strings.Join(edges, ", "))
	}
	if len(steps) > 0 {
		parts = append(parts, "steps never faulted: "+strings.Join(slices.Sorted(slices.Values(steps)), ", "))
	}
	return strings.Join(parts, "; ")
}
