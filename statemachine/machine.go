package statemachine

import (
	"cmp"
	"slices"
	"time"

	"github.com/tendhq/tend/statemachine/internal/phasegraph"
)

// Machine is a checked, immutable machine built by [New]. It is safe for
// concurrent use: every method is a pure function of its arguments.
type Machine[S, P comparable] struct {
	name    string
	states  []S
	stateIx map[S]int
	phases  []PhaseSpec[P]
	phaseIx map[P]int
	initial int
	failure int // index of the Fault phase, -1 when none
	settled map[Pair[S, P]]Settle[S, P]
	rules   map[Pair[S, P]]Rule[S, P]
	unreach map[Pair[S, P]]bool
	refused map[Pair[S, P]]string // the reason of each declared refusal
	aborts  map[Pair[S, P]]P
	cycles  map[Edge[P]]bool
	bounds  []Bounds         // [phase]: resolved; Deadline and MaxAttempts zero when unbounded
	failTo  []int            // [phase]: where a transitional phase goes past its bounds, -1 when nowhere
	edges   phasegraph.Graph // in declaration order, merged by (from, to, kind)
	final   int              // index of the state of the final pairs, -1 when none
	def     Definition[S, P]
}

// Name returns the machine's name.
func (m *Machine[S, P]) Name() string { return m.name }

// States returns the machine's states in declaration order.
func (m *Machine[S, P]) States() []S { return slices.Clone(m.states) }

// Phases returns the machine's phases in declaration order.
func (m *Machine[S, P]) Phases() []P {
	out := make([]P, len(m.phases))
	for i, ps := range m.phases {
		out[i] = ps.Phase
	}
	return out
}

// Initial returns the phase of a new object.
func (m *Machine[S, P]) Initial() P { return m.phases[m.initial].Phase }

// NewStatus returns the status of a new object: the initial phase, nothing else.
func (m *Machine[S, P]) NewStatus() Status[S, P] { return Status[S, P]{Phase: m.Initial()} }

// Spec returns the declaration of phase p.
func (m *Machine[S, P]) Spec(p P) (PhaseSpec[P], bool) {
	i, ok := m.phaseIx[p]
	if !ok {
		return PhaseSpec[P]{}, false
	}
	ps := m.phases[i]
	ps.Steps = slices.Clone(ps.Steps)
	ps.Completion = slices.Clone(ps.Completion)
	ps.Health = slices.Clone(ps.Health)
	ps.HealthEvery = m.healthEvery(i)
	ps.Bounds = m.bounds[i]
	if f := m.failTo[i]; f >= 0 {
		ps.FailTo = m.phases[f].Phase
	}
	return ps, true
}

// Definition returns a copy of the definition the machine was built from.
func (m *Machine[S, P]) Definition() Definition[S, P] { return cloneDefinition(m.def) }

// Steps returns every step name of every transitional phase, sorted and without
// repeats. A controller checks that each has an implementation.
func (m *Machine[S, P]) Steps() []string {
	var out []string
	for _, ps := range m.phases {
		out = append(out, ps.Steps...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Conditions returns the name of every condition a completion or a phase's
// health requires, sorted and without repeats. A controller checks that each
// is observed.
func (m *Machine[S, P]) Conditions() []string {
	var out []string
	for _, ps := range m.phases {
		for _, r := range slices.Concat(ps.Completion, ps.Health) {
			out = append(out, r.Condition)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Requests returns the name of every request the machine serves, in
// declaration order.
func (m *Machine[S, P]) Requests() []string {
	out := make([]string, len(m.def.Requests))
	for i, r := range m.def.Requests {
		out[i] = r.Name
	}
	return out
}

// ComputedTimers returns the name of every timer whose due time a
// controller computes from the object (those without After), in
// declaration order.
func (m *Machine[S, P]) ComputedTimers() []string {
	var out []string
	for _, t := range m.def.Timers {
		if t.After == 0 {
			out = append(out, t.Name)
		}
	}
	return out
}

// healthEvery returns how often phase i's health is observed again.
func (m *Machine[S, P]) healthEvery(i int) time.Duration {
	if len(m.phases[i].Health) == 0 {
		return 0
	}
	return cmp.Or(m.phases[i].HealthEvery, DefaultHealthEvery)
}

// Edges returns every phase change the machine can make (rules, completions,
// failures and aborts), without repeats, in declaration order.
func (m *Machine[S, P]) Edges() []Edge[P] {
	var out []Edge[P]
	for _, e := range m.edges {
		ed := Edge[P]{From: m.phases[e.From].Phase, To: m.phases[e.To].Phase}
		if !slices.Contains(out, ed) {
			out = append(out, ed)
		}
	}
	return out
}

// Admit reports whether an object in phase may be given intent. It returns an
// error matching [ErrUnknownState] or [ErrUnknownPhase] for values the machine
// does not declare, and an [*RefusalError] (matching [ErrIntentRefused])
// when the machine declares the pair refused (with its reason) or
// unreachable. An API calls Admit before it writes a new intent, in the same
// compare-and-swap as the phase it read; that is what makes
// declared-unreachable pairs truly unreachable.
func (m *Machine[S, P]) Admit(intent S, phase P) error {
	if _, _, err := m.indices(intent, phase); err != nil {
		return err
	}
	return m.refusal(intent, phase)
}

// ValidateIntent reports whether intent is a state of the machine, with an
// error matching [ErrUnknownState] that lists the states when it is not.
func (m *Machine[S, P]) ValidateIntent(intent S) error {
	if _, ok := m.stateIx[intent]; ok {
		return nil
	}
	return &StateError[S]{Machine: m.name, State: intent, Err: ErrUnknownState,
		Detail: "intent is not a state of the machine; the states are " + join(m.states, ", ")}
}

// refusal returns the [*RefusalError] of a pair declared refused or
// unreachable, or nil.
func (m *Machine[S, P]) refusal(intent S, phase P) error {
	pair := Pair[S, P]{intent, phase}
	if reason, ok := m.refused[pair]; ok {
		return &RefusalError[S, P]{Machine: m.name, Intent: intent, Phase: phase, Reason: reason}
	}
	if m.unreach[pair] {
		return &RefusalError[S, P]{Machine: m.name, Intent: intent, Phase: phase, Unreachable: true}
	}
	return nil
}

func (m *Machine[S, P]) indices(s S, p P) (int, int, error) {
	si, ok := m.stateIx[s]
	if !ok {
		return 0, 0, m.ValidateIntent(s)
	}
	pi, ok := m.phaseIx[p]
	if !ok {
		return 0, 0, &PhaseError[P]{Machine: m.name, Phase: p, Err: ErrUnknownPhase, Detail: "status phase is not a phase of the machine"}
	}
	return si, pi, nil
}

func cloneDefinition[S, P comparable](d Definition[S, P]) Definition[S, P] {
	d.States = slices.Clone(d.States)
	d.Phases = slices.Clone(d.Phases)
	for i := range d.Phases {
		d.Phases[i].Steps = slices.Clone(d.Phases[i].Steps)
		d.Phases[i].Completion = slices.Clone(d.Phases[i].Completion)
	}
	d.Settled = slices.Clone(d.Settled)
	d.Rules = slices.Clone(d.Rules)
	d.Refusals = slices.Clone(d.Refusals)
	for i := range d.Refusals {
		d.Refusals[i].States = slices.Clone(d.Refusals[i].States)
		d.Refusals[i].Phases = slices.Clone(d.Refusals[i].Phases)
	}
	d.Aborts = slices.Clone(d.Aborts)
	d.Requests = slices.Clone(d.Requests)
	for i := range d.Requests {
		r := &d.Requests[i]
		r.Serve, r.Moot, r.Refuse = slices.Clone(r.Serve), slices.Clone(r.Moot), slices.Clone(r.Refuse)
	}
	d.Timers = slices.Clone(d.Timers)
	for i := range d.Phases {
		d.Phases[i].Health = slices.Clone(d.Phases[i].Health)
	}
	d.Unreachable = slices.Clone(d.Unreachable)
	d.Cycles = slices.Clone(d.Cycles)
	d.Migrations = d.Migrations.clone()
	d.Errors = slices.Clone(d.Errors)
	for i := range d.Errors {
		d.Errors[i].Steps = slices.Clone(d.Errors[i].Steps)
		d.Errors[i].Retry = slices.Clone(d.Errors[i].Retry)
	}
	return d
}
