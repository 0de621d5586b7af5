package statemachine

import (
	"fmt"
	"strings"
	"time"

	"github.com/tendhq/tend/statemachine/internal/diagram"
)

// Mermaid returns the machine as a Mermaid stateDiagram-v2, for docs. Each
// phase box lists the intents settled in it and, for a transitional phase, its
// numbered steps; edges are labelled with the intents of their rules, the
// requirements of a completion, "abort on" the intents that abort an operation,
// or the failures (and the deadline) that give it up; points of no return are
// styled with class noreturn. The output depends only on the definition, so it
// can be compared with a golden file.
func (m *Machine[S, P]) Mermaid() string { return diagram.Mermaid(m.diagram()) }

// DOT returns the machine as a Graphviz digraph, with the same content as
// [Machine.Mermaid]: points of no return are drawn with a double border,
// failures dashed, aborts dotted and sanctioned cycles bold.
func (m *Machine[S, P]) DOT() string { return diagram.DOT(m.diagram()) }

// diagram returns what the diagrams draw of the machine.
func (m *Machine[S, P]) diagram() diagram.Machine {
	d := diagram.Machine{
		Name: m.name, Initial: m.initial, Edges: m.edges, TimerAfter: map[string]time.Duration{},
		States: mapAll(m.states, func(s S) string { return fmt.Sprint(s) }),
		Cycle:  func(from, to int) bool { return m.cycles[Edge[P]{m.phases[from].Phase, m.phases[to].Phase}] },
	}
	for i, ps := range m.phases {
		p := diagram.Phase{
			Name: fmt.Sprint(ps.Phase), NoReturn: ps.NoReturn, Terminal: ps.Type == Terminal, Steps: ps.Steps,
			Completion: mapAll(ps.Completion, func(r Require) diagram.Require { return diagram.Require(r) }),
			Deadline:   m.bounds[i].Deadline, MaxAttempts: m.bounds[i].MaxAttempts,
			Health: mapAll(ps.Health, Require.String),
		}
		for _, st := range m.def.Settled {
			if st.Phase == ps.Phase {
				p.Settles = append(p.Settles, fmt.Sprint(st.State))
				if st.Final {
					p.Final = append(p.Final, fmt.Sprint(st.State))
				}
			}
		}
		d.Phases = append(d.Phases, p)
	}
	for _, t := range m.def.Timers {
		d.TimerAfter[t.Name] = t.After
	}
	return d
}

func join[T any](vs []T, sep string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, sep)
}
