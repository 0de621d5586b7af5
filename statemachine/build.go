package statemachine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tendhq/tend/statemachine/internal/phasegraph"
)

// New checks def and builds its machine. It copies def and never modifies it.
//
// The returned error joins (with [errors.Join]) one error per problem found,
// each a [*PairError], [*PhaseError] or [*StateError] wrapping a sentinel:
//
//   - [ErrUnknownState], [ErrUnknownPhase]: a declaration names a value that
//     States or Phases does not declare;
//   - [ErrDuplicate], [ErrContradiction]: a value or pair declared twice, alike or
//     differently (a pair both settled and ruled, two rules with different
//     targets, a pair both ruled and declared unreachable);
//   - [ErrIncomplete]: a transitional phase without steps, completion or Then,
//     or with nowhere to fail to (no FailTo, no Fault phase, not Unbounded);
//   - [ErrInvalid]: a rule in a transitional or from a terminal phase, a rule
//     beginning a phase that is not transitional, a settled pair in a
//     transitional phase, a sanctioned cycle that is not an edge, …;
//   - [ErrTerminalExit]: a rule leaving a terminal phase;
//   - [ErrUnreachable]: a phase the initial phase cannot reach;
//   - [ErrNoReturn]: a path from a point of no return back to it that no
//     declared cycle sanctions;
//   - [ErrUncovered]: a pair in a resting or terminal phase that is neither
//     settled, ruled, declared refused nor declared unreachable (a stuck
//     document), or the final intent in the Fault phase without a rule or a
//     declared refusal (a failed document that could never be deleted);
//   - [ErrNoProgress]: the liveness check. With its intent held constant,
//     and assuming each operation eventually completes or runs out of its
//     bounds (either may happen), some pair can reach a point from which no
//     settled pair of that intent, declared refusal or — for any intent but
//     the final one — the Fault phase is reachable. The error names the pair
//     and the path to the dead end or loop.
//
// Refusals are only ever declared: a pair past a point of no return that
// cannot reach its intent any more must be listed in [Definition.Refusals].
// The last check runs only when all others pass. New never panics.
func New[S, P comparable](def Definition[S, P]) (*Machine[S, P], error) {
	def = cloneDefinition(def)
	b := builder[S, P]{m: &Machine[S, P]{
		name:    def.Name,
		stateIx: map[S]int{},
		phaseIx: map[P]int{},
		failure: -1,
		settled: map[Pair[S, P]]Settle[S, P]{},
		rules:   map[Pair[S, P]]Rule[S, P]{},
		unreach: map[Pair[S, P]]bool{},
		refused: map[Pair[S, P]]string{},
		aborts:  map[Pair[S, P]]P{},
		cycles:  map[Edge[P]]bool{},
		final:   -1,
		def:     def,
	}}
	if b.m.name == "" {
		b.m.name = "machine"
	}
	b.declare(def)
	b.bound(def)
	b.tables(def)
	b.migrations(def.Migrations)
	b.errorClasses(def)
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.graph()
	b.coverage()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.liveness()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return b.m, nil
}

// builder accumulates the errors of one New call.
type builder[S, P comparable] struct {
	m    *Machine[S, P]
	errs []error
}

func (b *builder[S, P]) pairErr(s S, p P, err error, format string, args ...any) {
	b.errs = append(b.errs, &PairError[S, P]{Machine: b.m.name, State: s, Phase: p, Err: err, Detail: fmt.Sprintf(format, args...)})
}

func (b *builder[S, P]) phaseErr(p P, err error, format string, args ...any) {
	b.errs = append(b.errs, &PhaseError[P]{Machine: b.m.name, Phase: p, Err: err, Detail: fmt.Sprintf(format, args...)})
}

func (b *builder[S, P]) stateErr(s S, err error, format string, args ...any) {
	b.errs = append(b.errs, &StateError[S]{Machine: b.m.name, State: s, Err: err, Detail: fmt.Sprintf(format, args...)})
}

// declare records states and phases and checks each phase on its own.
func (b *builder[S, P]) declare(def Definition[S, P]) {
	m := b.m
	if len(def.States) == 0 {
		b.errs = append(b.errs, fmt.Errorf("%s: no states declared: %w", m.name, ErrInvalid))
	}
	if len(def.Phases) == 0 {
		b.errs = append(b.errs, fmt.Errorf("%s: no phases declared: %w", m.name, ErrInvalid))
	}
	names := map[string]bool{}
	for _, s := range def.States {
		if _, dup := m.stateIx[s]; dup {
			b.stateErr(s, ErrDuplicate, "state declared twice")
			continue
		}
		if n := fmt.Sprint(s); n == "" || names[n] {
			b.stateErr(s, ErrDuplicate, "state name %q is empty or not unique", n)
		} else {
			names[n] = true
		}
		m.stateIx[s] = len(m.states)
		m.states = append(m.states, s)
	}
	names = map[string]bool{}
	for _, ps := range def.Phases {
		if _, dup := m.phaseIx[ps.Phase]; dup {
			b.phaseErr(ps.Phase, ErrDuplicate, "phase declared twice")
			continue
		}
		if n := fmt.Sprint(ps.Phase); n == "" || names[n] {
			b.phaseErr(ps.Phase, ErrDuplicate, "phase name %q is empty or not unique", n)
		} else {
			names[n] = true
		}
		m.phaseIx[ps.Phase] = len(m.phases)
		m.phases = append(m.phases, ps)
	}
	for i, ps := range m.phases {
		b.checkPhase(i, ps)
	}
	if i, ok := m.phaseIx[def.Initial]; ok {
		m.initial = i
	} else {
		b.phaseErr(def.Initial, ErrUnknownPhase, "initial phase is not declared")
	}
}

func (b *builder[S, P]) checkPhase(i int, ps PhaseSpec[P]) {
	var zero P
	switch ps.Type {
	case Resting, Terminal:
	case Fault:
		if b.m.failure >= 0 {
			b.phaseErr(ps.Phase, ErrDuplicate, "second fault phase (the first is %v)", b.m.phases[b.m.failure].Phase)
		} else {
			b.m.failure = i
		}
	case Transitional:
		if len(ps.Steps) == 0 {
			b.phaseErr(ps.Phase, ErrIncomplete, "transitional phase has no steps")
		}
		if len(ps.Completion) == 0 {
			b.phaseErr(ps.Phase, ErrIncomplete, "transitional phase has no completion requirement")
		}
		if _, ok := b.m.phaseIx[ps.Then]; !ok {
			b.phaseErr(ps.Phase, ErrIncomplete, "completion phase %v is not declared", ps.Then)
		} else if ps.Then == ps.Phase {
			b.phaseErr(ps.Phase, ErrInvalid, "transitional phase completes into itself")
		}
		seen := map[string]bool{}
		for _, st := range ps.Steps {
			switch {
			case st == "":
				b.phaseErr(ps.Phase, ErrInvalid, "empty step name")
			case seen[st]:
				b.phaseErr(ps.Phase, ErrDuplicate, "step %q declared twice", st)
			}
			seen[st] = true
		}
		req := map[string]bool{}
		for _, r := range ps.Completion {
			if r.Condition == "" {
				b.phaseErr(ps.Phase, ErrInvalid, "completion requires an unnamed condition")
				continue
			}
			if st, dup := req[r.Condition]; dup {
				if st == r.Status {
					b.phaseErr(ps.Phase, ErrDuplicate, "completion requires %s twice", r)
				} else {
					b.phaseErr(ps.Phase, ErrContradiction, "completion requires condition %q both true and false", r.Condition)
				}
			}
			req[r.Condition] = r.Status
		}
		return
	default:
		b.phaseErr(ps.Phase, ErrInvalid, "unknown phase type %v", ps.Type)
		return
	}
	if len(ps.Steps) > 0 || len(ps.Completion) > 0 || ps.Then != zero || ps.FailTo != zero || ps.Unbounded || ps.Bounds != (Bounds{}) {
		b.phaseErr(ps.Phase, ErrInvalid, "%s phase declares steps, a completion, Then, FailTo or bounds; only transitional phases do", ps.Type)
	}
	b.checkHealth(ps)
}

// checkHealth checks a phase's Health, Repair and HealthEvery.
func (b *builder[S, P]) checkHealth(ps PhaseSpec[P]) {
	var zero P
	switch {
	case len(ps.Health) == 0 && ps.Repair == zero && ps.HealthEvery == 0:
		return
	case ps.Type != Resting:
		b.phaseErr(ps.Phase, ErrInvalid, "%s phase declares health; only resting phases do", ps.Type)
	case len(ps.Health) == 0 || ps.Repair == zero:
		b.phaseErr(ps.Phase, ErrIncomplete, "health needs both conditions and a Repair phase")
	case ps.HealthEvery < 0:
		b.phaseErr(ps.Phase, ErrInvalid, "negative HealthEvery %v", ps.HealthEvery)
	}
	for _, r := range ps.Health {
		if r.Condition == "" {
			b.phaseErr(ps.Phase, ErrInvalid, "health requires an unnamed condition")
		}
	}
}

// bound resolves each transitional phase's bounds and FailTo phase.
func (b *builder[S, P]) bound(def Definition[S, P]) {
	m := b.m
	var zero P
	m.bounds = make([]Bounds, len(m.phases))
	m.failTo = make([]int, len(m.phases))
	negative := func(bd Bounds) bool { return bd.Deadline < 0 || bd.MaxAttempts < 0 || bd.StepTimeout < 0 }
	if negative(def.Bounds) {
		b.errs = append(b.errs, fmt.Errorf("%s: negative bounds %+v: %w", m.name, def.Bounds, ErrInvalid))
	}
	for i, ps := range m.phases {
		m.failTo[i] = m.failure
		if ps.Type != Transitional {
			continue
		}
		if negative(ps.Bounds) {
			b.phaseErr(ps.Phase, ErrInvalid, "negative bounds %+v", ps.Bounds)
		}
		bd := Bounds{
			Deadline:    cmp.Or(ps.Bounds.Deadline, def.Bounds.Deadline, DefaultDeadline),
			MaxAttempts: cmp.Or(ps.Bounds.MaxAttempts, def.Bounds.MaxAttempts),
			StepTimeout: cmp.Or(ps.Bounds.StepTimeout, def.Bounds.StepTimeout, DefaultStepTimeout),
		}
		if ps.FailTo != zero {
			switch f, ok := m.phaseIx[ps.FailTo]; {
			case !ok:
				b.phaseErr(ps.Phase, ErrUnknownPhase, "FailTo names undeclared phase %v", ps.FailTo)
			case f == i:
				b.phaseErr(ps.Phase, ErrInvalid, "transitional phase fails to itself")
			default:
				m.failTo[i] = f
			}
		}
		if ps.Unbounded {
			if ps.Bounds.Deadline != 0 || ps.Bounds.MaxAttempts != 0 {
				b.phaseErr(ps.Phase, ErrContradiction, "phase is Unbounded but declares a deadline or an attempt cap")
			}
			bd.Deadline, bd.MaxAttempts = 0, 0
		} else if m.failTo[i] < 0 && ps.FailTo == zero {
			b.phaseErr(ps.Phase, ErrIncomplete, "transitional phase has nowhere to go past its deadline: declare a Fault phase, FailTo, or mark it Unbounded")
		}
		m.bounds[i] = bd
	}
}

// known reports whether s and p are declared, recording errors for the pair.
func (b *builder[S, P]) known(s S, p P, what string) bool {
	_, sok := b.m.stateIx[s]
	_, pok := b.m.phaseIx[p]
	if !sok {
		b.pairErr(s, p, ErrUnknownState, "%s names an undeclared state", what)
	}
	if !pok {
		b.pairErr(s, p, ErrUnknownPhase, "%s names an undeclared phase", what)
	}
	return sok && pok
}

func (b *builder[S, P]) kind(p P) PhaseType { return b.m.phases[b.m.phaseIx[p]].Type }

// tables records settled pairs, rules, unreachable pairs and cycles.
func (b *builder[S, P]) tables(def Definition[S, P]) {
	m := b.m
	for _, st := range def.Settled {
		if !b.known(st.State, st.Phase, "settled pair") {
			continue
		}
		pair := Pair[S, P]{st.State, st.Phase}
		if _, dup := m.settled[pair]; dup {
			b.pairErr(st.State, st.Phase, ErrDuplicate, "pair settled twice")
			continue
		}
		if b.kind(st.Phase) == Transitional {
			b.pairErr(st.State, st.Phase, ErrInvalid, "settled in a transitional phase (settle in the phase it completes into)")
		}
		m.settled[pair] = st
	}
	for _, r := range def.Rules {
		if !b.known(r.State, r.Phase, "rule") {
			continue
		}
		pair := Pair[S, P]{r.State, r.Phase}
		if prev, dup := m.rules[pair]; dup {
			if prev.Begin == r.Begin {
				b.pairErr(r.State, r.Phase, ErrDuplicate, "rule declared twice")
			} else {
				b.pairErr(r.State, r.Phase, ErrContradiction, "rules begin both %v and %v", prev.Begin, r.Begin)
			}
			continue
		}
		switch b.kind(r.Phase) {
		case Transitional:
			b.pairErr(r.State, r.Phase, ErrInvalid, "rule in a transitional phase (declare an AbortRule to stop an operation)")
		case Terminal:
			b.pairErr(r.State, r.Phase, ErrTerminalExit, "rule begins %v from a terminal phase", r.Begin)
		}
		if _, ok := m.phaseIx[r.Begin]; !ok {
			b.pairErr(r.State, r.Phase, ErrUnknownPhase, "rule begins undeclared phase %v", r.Begin)
		} else if b.kind(r.Begin) != Transitional {
			b.pairErr(r.State, r.Phase, ErrInvalid, "rule begins %v, which is not transitional", r.Begin)
		}
		if hasKey(m.settled, pair) {
			b.pairErr(r.State, r.Phase, ErrContradiction, "pair is both settled and ruled (begins %v)", r.Begin)
		}
		m.rules[pair] = r
	}
	for _, u := range def.Unreachable {
		if !b.known(u.State, u.Phase, "unreachable pair") {
			continue
		}
		switch {
		case m.unreach[u]:
			b.pairErr(u.State, u.Phase, ErrDuplicate, "pair declared unreachable twice")
		case hasKey(m.settled, u):
			b.pairErr(u.State, u.Phase, ErrContradiction, "pair declared unreachable is also settled")
		case hasKey(m.rules, u):
			b.pairErr(u.State, u.Phase, ErrContradiction, "pair declared unreachable also has a rule")
		case b.kind(u.Phase) == Transitional:
			b.pairErr(u.State, u.Phase, ErrInvalid, "pair declared unreachable in a transitional phase (intent is not consulted there)")
		}
		m.unreach[u] = true
	}
	for _, r := range def.Refusals {
		if r.Reason == "" {
			b.errs = append(b.errs, fmt.Errorf("%s: refusal of %v in %v has no reason: %w", m.name, r.States, r.Phases, ErrInvalid))
		}
		for _, s := range r.States {
			for _, p := range r.Phases {
				if !b.known(s, p, "refusal") {
					continue
				}
				pair := Pair[S, P]{s, p}
				switch {
				case hasKey(m.refused, pair):
					b.pairErr(s, p, ErrDuplicate, "pair refused twice")
				case hasKey(m.settled, pair):
					b.pairErr(s, p, ErrContradiction, "pair declared refused is also settled")
				case hasKey(m.rules, pair):
					b.pairErr(s, p, ErrContradiction, "pair declared refused also has a rule")
				case m.unreach[pair]:
					b.pairErr(s, p, ErrContradiction, "pair declared refused is also declared unreachable")
				}
				m.refused[pair] = r.Reason
			}
		}
	}
	for _, a := range def.Aborts {
		if !b.known(a.State, a.Phase, "abort") {
			continue
		}
		pair := Pair[S, P]{a.State, a.Phase}
		switch _, ok := m.phaseIx[a.To]; {
		case !ok:
			b.pairErr(a.State, a.Phase, ErrUnknownPhase, "abort to undeclared phase %v", a.To)
		case b.kind(a.Phase) != Transitional:
			b.pairErr(a.State, a.Phase, ErrInvalid, "abort from %v, which is not transitional", a.Phase)
		case a.To == a.Phase:
			b.pairErr(a.State, a.Phase, ErrInvalid, "abort to the phase it aborts")
		case hasKey(m.aborts, pair):
			b.pairErr(a.State, a.Phase, ErrDuplicate, "abort declared twice")
		case hasKey(m.refused, pair):
			b.pairErr(a.State, a.Phase, ErrContradiction, "pair declared refused also aborts")
		}
		m.aborts[pair] = a.To
	}
	for _, st := range def.Settled {
		if st.Final {
			m.final = m.stateIx[st.State]
			break
		}
	}
	b.optional(def)
}

// optional checks the moves a settled object may make without a change of
// intent: drift repairs, requests and timers. Each leaves a resting phase
// for a transitional one.
func (b *builder[S, P]) optional(def Definition[S, P]) {
	m := b.m
	move := func(what string, from, to P) {
		fi, fok := m.phaseIx[from]
		ti, tok := m.phaseIx[to]
		switch {
		case !fok || !tok:
			b.phaseErr(from, ErrUnknownPhase, "%s names an undeclared phase (%v → %v)", what, from, to)
		case m.phases[fi].Type != Resting:
			b.phaseErr(from, ErrInvalid, "%s from %v, which is not resting", what, from)
		case m.phases[ti].Type != Transitional:
			b.phaseErr(from, ErrInvalid, "%s begins %v, which is not transitional", what, to)
		}
	}
	for _, ps := range m.phases {
		if len(ps.Health) > 0 {
			move("drift repair", ps.Phase, ps.Repair)
		}
	}
	names := map[string]bool{}
	for _, r := range def.Requests {
		if r.Name == "" || names[r.Name] {
			b.errs = append(b.errs, fmt.Errorf("%s: request name %q is empty or declared twice: %w", m.name, r.Name, ErrDuplicate))
		}
		names[r.Name] = true
		if len(r.Serve) == 0 && len(r.Moot) == 0 && len(r.Refuse) == 0 {
			b.errs = append(b.errs, fmt.Errorf("%s: request %q is served nowhere: %w", m.name, r.Name, ErrIncomplete))
		}
		if len(r.Refuse) > 0 && r.Reason == "" {
			b.errs = append(b.errs, fmt.Errorf("%s: request %q is refused without a reason: %w", m.name, r.Name, ErrInvalid))
		}
		seen := map[P]bool{}
		for _, e := range r.Serve {
			move("request "+r.Name, e.From, e.To)
			if seen[e.From] {
				b.phaseErr(e.From, ErrContradiction, "request %s served twice there", r.Name)
			}
			seen[e.From] = true
		}
		for _, p := range slices.Concat(r.Moot, r.Refuse) {
			switch i, ok := m.phaseIx[p]; {
			case !ok:
				b.phaseErr(p, ErrUnknownPhase, "request %s names an undeclared phase", r.Name)
			case m.phases[i].Type != Resting:
				b.phaseErr(p, ErrInvalid, "request %s names %v, which is not resting", r.Name, p)
			case seen[p]:
				b.phaseErr(p, ErrContradiction, "request %s is served, moot or refused there twice", r.Name)
			}
			seen[p] = true
		}
	}
	names = map[string]bool{}
	for _, t := range def.Timers {
		if t.Name == "" || names[t.Name] {
			b.errs = append(b.errs, fmt.Errorf("%s: timer name %q is empty or declared twice: %w", m.name, t.Name, ErrDuplicate))
		}
		names[t.Name] = true
		if t.After < 0 {
			b.phaseErr(t.Phase, ErrInvalid, "timer %s: negative After %v", t.Name, t.After)
		}
		move("timer "+t.Name, t.Phase, t.Begin)
	}
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// graph builds the phase graph and checks reachability, terminal exits, points
// of no return and sanctioned cycles.
func (b *builder[S, P]) graph() {
	m := b.m
	for i, ps := range m.phases {
		for _, r := range m.def.Rules {
			if r.Phase == ps.Phase {
				m.edges.Merge(i, m.phaseIx[r.Begin], phasegraph.Rule, m.stateIx[r.State])
			}
		}
		if ps.Type != Transitional {
			continue
		}
		m.edges.Merge(i, m.phaseIx[ps.Then], phasegraph.Completion, -1)
		if m.failTo[i] >= 0 {
			m.edges.Merge(i, m.failTo[i], phasegraph.Failure, -1)
		}
		for _, a := range m.def.Aborts {
			if a.Phase == ps.Phase {
				m.edges.Merge(i, m.phaseIx[a.To], phasegraph.Abort, m.stateIx[a.State])
			}
		}
	}
	for i, ps := range m.phases {
		if len(ps.Health) > 0 {
			m.edges = append(m.edges, phasegraph.Edge{From: i, To: m.phaseIx[ps.Repair], Kind: phasegraph.Drift})
		}
	}
	for _, r := range m.def.Requests {
		for _, e := range r.Serve {
			m.edges = append(m.edges, phasegraph.Edge{From: m.phaseIx[e.From], To: m.phaseIx[e.To], Kind: phasegraph.Request, Name: r.Name})
		}
	}
	for _, t := range m.def.Timers {
		m.edges = append(m.edges, phasegraph.Edge{From: m.phaseIx[t.Phase], To: m.phaseIx[t.Begin], Kind: phasegraph.Timer, Name: t.Name})
	}
	for _, c := range m.def.Cycles {
		fi, fok := m.phaseIx[c.From]
		ti, tok := m.phaseIx[c.To]
		if !fok || !tok {
			b.phaseErr(c.From, ErrUnknownPhase, "sanctioned cycle %v → %v names an undeclared phase", c.From, c.To)
			continue
		}
		if !slices.ContainsFunc(m.edges, func(e phasegraph.Edge) bool { return e.From == fi && e.To == ti && e.Kind != phasegraph.Failure }) {
			b.phaseErr(c.From, ErrInvalid, "sanctioned cycle %v → %v is not a rule, completion or abort edge", c.From, c.To)
			continue
		}
		if m.cycles[c] {
			b.phaseErr(c.From, ErrDuplicate, "cycle %v → %v sanctioned twice", c.From, c.To)
		}
		m.cycles[c] = true
	}

	// Every phase reachable from the initial phase, failures included.
	seen := m.edges.Reach([]int{m.initial}, func(phasegraph.Edge) bool { return true })
	for i, ps := range m.phases {
		if !seen[i] {
			b.phaseErr(ps.Phase, ErrUnreachable, "no path from initial phase %v", m.phases[m.initial].Phase)
		}
	}
	// Points of no return: no path back without a sanctioned cycle. Failures
	// do not count: an operator's way back is not a path of the machine's.
	forward := func(e phasegraph.Edge) bool {
		return e.Kind != phasegraph.Failure && !m.cycles[Edge[P]{m.phases[e.From].Phase, m.phases[e.To].Phase}]
	}
	for i, ps := range m.phases {
		if !ps.NoReturn {
			continue
		}
		if path := m.edges.PathBack(i, forward); path != nil {
			b.phaseErr(ps.Phase, ErrNoReturn, "path %s leads back; remove it or declare a sanctioned cycle", b.phasePath(path))
		}
	}
}

func (b *builder[S, P]) phasePath(path []int) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(b.m.phases[p].Phase)
	}
	return strings.Join(parts, " → ")
}

// covered reports whether a pair is settled, ruled, refused or declared
// unreachable.
func (m *Machine[S, P]) covered(pair Pair[S, P]) bool {
	return hasKey(m.settled, pair) || hasKey(m.rules, pair) || hasKey(m.refused, pair) || m.unreach[pair]
}

// coverage checks that every pair in a resting or terminal phase is covered,
// and that the final intent is covered in the Fault phase.
func (b *builder[S, P]) coverage() {
	m := b.m
	for pi, ps := range m.phases {
		for si, s := range m.states {
			pair := Pair[S, P]{s, ps.Phase}
			if m.covered(pair) {
				continue
			}
			switch {
			case ps.Type == Terminal:
				b.pairErr(s, ps.Phase, ErrUncovered, "terminal phase, but the pair is not settled or declared refused")
			case ps.Type == Resting:
				b.pairErr(s, ps.Phase, ErrUncovered, "no settled pair, rule or refusal covers it; an object here would be stuck")
			case pi == m.failure && si == m.final:
				b.pairErr(s, ps.Phase, ErrUncovered, "the final intent has no rule in the fault phase: a failed object could never end its life; add a rule or declare the pair refused")
			}
		}
	}
}

// liveness checks, for each intent held constant, that every pair it can
// be in reaches an end: see [ErrNoProgress].
func (b *builder[S, P]) liveness() {
	m := b.m
	for si, s := range m.states {
		for pi, ps := range m.phases {
			pair := Pair[S, P]{s, ps.Phase}
			if hasKey(m.refused, pair) || m.unreach[pair] {
				continue
			}
			if path, why := b.deadEnd(si, pi); why != "" {
				b.pairErr(s, ps.Phase, ErrNoProgress, "path %s %s", b.phasePath(path), why)
			}
		}
	}
}

// end reports whether intent si is at an end in phase pi: settled, refused,
// or held in the Fault phase (any intent but the final one). A pair declared
// unreachable is never an end: reaching it is a hole.
func (b *builder[S, P]) end(si, pi int) bool {
	m := b.m
	pair := Pair[S, P]{m.states[si], m.phases[pi].Phase}
	if m.unreach[pair] {
		return false
	}
	if hasKey(m.settled, pair) || hasKey(m.refused, pair) {
		return true
	}
	return pi == m.failure && si != m.final && !hasKey(m.rules, pair)
}

// next returns the moves phase pi allows with intent si held constant, or
// the reason it is a dead end. At an end, only the optional moves of a
// settled object are returned.
func (b *builder[S, P]) next(si, pi int) ([]phasegraph.Move, string) {
	m := b.m
	s, ps := m.states[si], m.phases[pi]
	pair := Pair[S, P]{s, ps.Phase}
	if b.end(si, pi) {
		var out []phasegraph.Move
		if hasKey(m.settled, pair) {
			for _, e := range m.edges {
				if e.From == pi && (e.Kind == phasegraph.Drift || e.Kind == phasegraph.Request || e.Kind == phasegraph.Timer) {
					out = append(out, phasegraph.Move{To: e.To, Optional: true})
				}
			}
		}
		return out, ""
	}
	if ps.Type == Transitional {
		out := []phasegraph.Move{{To: m.phaseIx[ps.Then]}}
		if f := m.failTo[pi]; f >= 0 {
			out = append(out, phasegraph.Move{To: f, Optional: true})
		}
		if to, ok := m.aborts[pair]; ok {
			out = append(out, phasegraph.Move{To: m.phaseIx[to]})
		}
		return out, ""
	}
	if r, ok := m.rules[pair]; ok {
		return []phasegraph.Move{{To: m.phaseIx[r.Begin]}}, ""
	}
	switch {
	case m.unreach[pair]:
		return nil, fmt.Sprintf("reaches (%v, %v), declared unreachable", s, ps.Phase)
	case pi == m.failure:
		return nil, fmt.Sprintf("reaches the fault phase %v, where the final intent %v has no rule", ps.Phase, s)
	}
	return nil, fmt.Sprintf("reaches (%v, %v), which nothing settles", s, ps.Phase)
}

// deadEnd explores every phase reachable from start with intent si held
// constant: see [phasegraph.Walk.DeadEnd].
func (b *builder[S, P]) deadEnd(si, start int) ([]int, string) {
	w := phasegraph.Walk{
		Next: func(n int) ([]phasegraph.Move, string) { return b.next(si, n) },
		End:  func(n int) bool { return b.end(si, n) },
		Path: b.phasePath,
	}
	return w.DeadEnd(start)
}
