package statemachine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Descriptor is a machine's definition with every State and Phase written as
// its String form (fmt.Sprint): plain data that a program which does not link
// the machine's Go types can store, read and rebuild. A tool that finds a
// Descriptor in a store builds it with [New] (or decodes and builds it with
// [ParseDescriptor]) and gets a Machine[string, string] that draws the same
// diagrams and makes the same decisions as the original, with states and
// phases named by their strings.
//
// A Descriptor encodes to JSON as an object with lower-case keys, phase kinds
// as their names ("transitional") and durations as nanoseconds.
type Descriptor = Definition[string, string]

// Descriptor returns the machine's definition as a [Descriptor].
//
// The optional phase fields (a phase's Then, FailTo and Repair) become "" when
// they are P's zero value, as that value means "not set" there whatever it
// prints as; every other State and Phase becomes fmt.Sprint of it. Two
// distinct states or phases must therefore print differently: [New] rejects
// a descriptor where two of them do not.
func (m *Machine[S, P]) Descriptor() Descriptor {
	d := m.def
	str := func(p P) string { return fmt.Sprint(p) }
	opt := func(p P) string {
		var zero P
		if p == zero {
			return ""
		}
		return fmt.Sprint(p)
	}
	out := Descriptor{
		Name:        d.Name,
		States:      mapAll(d.States, func(s S) string { return fmt.Sprint(s) }),
		Initial:     str(d.Initial),
		Bounds:      d.Bounds,
		Unreachable: mapAll(d.Unreachable, stringPair[S, P]),
		Cycles:      mapAll(d.Cycles, stringEdge[P]),
		Version:     d.Version,
		Migrations: Migrations[string, string]{
			States: mapAll(d.Migrations.States, func(r Rename[S]) Rename[string] {
				return Rename[string]{From: fmt.Sprint(r.From), To: fmt.Sprint(r.To)}
			}),
			Phases: mapAll(d.Migrations.Phases, func(r Rename[P]) Rename[string] { return Rename[string]{From: str(r.From), To: str(r.To)} }),
			Steps:  slices.Clone(d.Migrations.Steps),
			Resume: mapAll(d.Migrations.Resume, func(r Resume[P]) Resume[string] { return Resume[string]{Phase: str(r.Phase), At: r.At} }),
		},
	}
	out.Phases = mapAll(d.Phases, func(ps PhaseSpec[P]) PhaseSpec[string] {
		return PhaseSpec[string]{
			Phase: str(ps.Phase), Type: ps.Type, NoReturn: ps.NoReturn,
			Steps: slices.Clone(ps.Steps), Completion: slices.Clone(ps.Completion),
			Then: opt(ps.Then), Bounds: ps.Bounds, FailTo: opt(ps.FailTo), Unbounded: ps.Unbounded,
			Health: slices.Clone(ps.Health), Repair: opt(ps.Repair), HealthEvery: ps.HealthEvery,
		}
	})
	out.Settled = mapAll(d.Settled, func(st Settle[S, P]) Settle[string, string] {
		return Settle[string, string]{State: fmt.Sprint(st.State), Phase: str(st.Phase), Final: st.Final}
	})
	out.Rules = mapAll(d.Rules, func(r Rule[S, P]) Rule[string, string] {
		return Rule[string, string]{State: fmt.Sprint(r.State), Phase: str(r.Phase), Begin: str(r.Begin)}
	})
	out.Refusals = mapAll(d.Refusals, func(r RefusalRule[S, P]) RefusalRule[string, string] {
		return RefusalRule[string, string]{
			States: mapAll(r.States, func(s S) string { return fmt.Sprint(s) }),
			Phases: mapAll(r.Phases, str), Reason: r.Reason,
		}
	})
	out.Aborts = mapAll(d.Aborts, func(a AbortRule[S, P]) AbortRule[string, string] {
		return AbortRule[string, string]{State: fmt.Sprint(a.State), Phase: str(a.Phase), To: str(a.To)}
	})
	out.Requests = mapAll(d.Requests, func(r RequestRule[P]) RequestRule[string] {
		return RequestRule[string]{
			Name: r.Name, Serve: mapAll(r.Serve, stringEdge[P]),
			Moot: mapAll(r.Moot, str), Refuse: mapAll(r.Refuse, str), Reason: r.Reason, Queue: r.Queue,
		}
	})
	out.Timers = mapAll(d.Timers, func(t Timer[P]) Timer[string] {
		return Timer[string]{Name: t.Name, Phase: str(t.Phase), After: t.After, Begin: str(t.Begin)}
	})
	return out
}

// ParseDescriptor decodes a [Descriptor] from its JSON form and builds it, as
// [New] does: a malformed document or a definition that does not build is an
// error (the build's errors match the package's sentinels).
func ParseDescriptor(data []byte) (*Machine[string, string], error) {
	var d Descriptor
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("statemachine: decoding a descriptor: %w", err)
	}
	return New(d)
}

func stringPair[S, P comparable](p Pair[S, P]) Pair[string, string] {
	return Pair[string, string]{State: fmt.Sprint(p.State), Phase: fmt.Sprint(p.Phase)}
}

func stringEdge[P comparable](e Edge[P]) Edge[string] {
	return Edge[string]{From: fmt.Sprint(e.From), To: fmt.Sprint(e.To)}
}

// mapAll returns f of every element of in, or nil for an empty in.
func mapAll[T, U any](in []T, f func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// MarshalText encodes the type as its name.
func (k PhaseType) MarshalText() ([]byte, error) {
	switch k {
	case Resting, Transitional, Terminal, Fault:
		return []byte(k.String()), nil
	}
	return nil, fmt.Errorf("statemachine: unknown phase type %d", int(k))
}

// UnmarshalText decodes a type from its name.
func (k *PhaseType) UnmarshalText(text []byte) error {
	for _, c := range []PhaseType{Resting, Transitional, Terminal, Fault} {
		if string(text) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("statemachine: unknown phase type %q", text)
}
