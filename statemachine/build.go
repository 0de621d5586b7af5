package statemachine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// New checks def and builds its machine. It copies def and never modifies it.
//
// The returned error joins (with [errors.Join]) one error per problem found,
// each a [*PairError], [*PhaseError] or [*StateError] wrapping a sentinel:
//
//   - [ErrUnknownState], [ErrUnknownPhase]: a declaration names a value that
//     States or Phases does not declare;
//   - [ErrDuplicate], [ErrConflict]: a value or pair declared twice, alike or
//     differently (a pair both settled and ruled, two rules with different
//     targets, a pair both ruled and declared unreachable);
//   - [ErrIncomplete]: a transitional phase without steps, completion or Then;
//   - [ErrInvalid]: a rule in a transitional or from a terminal phase, a rule
//     beginning a phase that is not transitional, a settled pair in a
//     transitional phase, a sanctioned cycle that is not an edge, …;
//   - [ErrTerminalExit]: a rule leaving a terminal phase;
//   - [ErrUnreachable]: a phase the initial phase cannot reach;
//   - [ErrNoReturn]: a path from a point of no return back to it that no
//     declared cycle sanctions;
//   - [ErrUncovered]: a pair in a resting or terminal phase that is neither
//     settled, ruled, nor declared unreachable, and whose intent is not refused
//     there (the "vn8ofl" stuck document);
//   - [ErrNoProgress]: with its intent held constant, a ruled pair or a
//     transitional phase never reaches a settled pair.
//
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
		cycles:  map[Edge[P]]bool{},
		def:     def,
	}}
	if b.m.name == "" {
		b.m.name = "machine"
	}
	b.declare(def)
	b.tables(def)
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.graph()
	b.coverage()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.progress()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return b.m, nil
}

// builder accumulates the errors of one New call.
type builder[S, P comparable] struct {
	m         *Machine[S, P]
	errs      []error
	committed []bool // [phase]: reachable from a point of no return or a terminal phase
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
	switch ps.Kind {
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
					b.phaseErr(ps.Phase, ErrConflict, "completion requires condition %q both true and false", r.Condition)
				}
			}
			req[r.Condition] = r.Status
		}
		return
	default:
		b.phaseErr(ps.Phase, ErrInvalid, "unknown phase kind %v", ps.Kind)
		return
	}
	if len(ps.Steps) > 0 || len(ps.Completion) > 0 || ps.Then != zero {
		b.phaseErr(ps.Phase, ErrInvalid, "%s phase declares steps, a completion or Then; only transitional phases do", ps.Kind)
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

func (b *builder[S, P]) kind(p P) PhaseKind { return b.m.phases[b.m.phaseIx[p]].Kind }

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
			b.pairErr(st.State, st.Phase, ErrInvalid, "settled in a transitional phase (operations are never pre-empted; settle in the phase it completes into)")
		}
		for _, a := range st.After {
			if _, ok := m.phaseIx[a]; !ok {
				b.pairErr(st.State, st.Phase, ErrUnknownPhase, "settled after undeclared phase %v", a)
			} else if b.kind(a) != Transitional {
				b.pairErr(st.State, st.Phase, ErrInvalid, "settled after %v, which is not transitional", a)
			}
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
				b.pairErr(r.State, r.Phase, ErrConflict, "rules begin both %v and %v", prev.Begin, r.Begin)
			}
			continue
		}
		switch b.kind(r.Phase) {
		case Transitional:
			b.pairErr(r.State, r.Phase, ErrInvalid, "rule in a transitional phase (operations are never pre-empted)")
		case Terminal:
			b.pairErr(r.State, r.Phase, ErrTerminalExit, "rule begins %v from a terminal phase", r.Begin)
		}
		if _, ok := m.phaseIx[r.Begin]; !ok {
			b.pairErr(r.State, r.Phase, ErrUnknownPhase, "rule begins undeclared phase %v", r.Begin)
		} else if b.kind(r.Begin) != Transitional {
			b.pairErr(r.State, r.Phase, ErrInvalid, "rule begins %v, which is not transitional", r.Begin)
		}
		if st, ok := m.settled[pair]; ok && len(st.After) == 0 {
			b.pairErr(r.State, r.Phase, ErrConflict, "pair is both settled and ruled (begins %v)", r.Begin)
		}
		m.rules[pair] = r
	}
	reported := map[Pair[S, P]]bool{}
	for _, st := range def.Settled {
		pair := Pair[S, P]{st.State, st.Phase}
		if st, ok := m.settled[pair]; ok && len(st.After) > 0 && !hasKey(m.rules, pair) && !reported[pair] {
			reported[pair] = true
			b.pairErr(st.State, st.Phase, ErrUncovered, "settled only after %v, but no rule covers the pair until then", st.After)
		}
	}
	for _, u := range def.Unreachable {
		if !b.known(u.State, u.Phase, "unreachable pair") {
			continue
		}
		switch {
		case m.unreach[u]:
			b.pairErr(u.State, u.Phase, ErrDuplicate, "pair declared unreachable twice")
		case hasKey(m.settled, u):
			b.pairErr(u.State, u.Phase, ErrConflict, "pair declared unreachable is also settled")
		case hasKey(m.rules, u):
			b.pairErr(u.State, u.Phase, ErrConflict, "pair declared unreachable also has a rule")
		case b.kind(u.Phase) == Transitional:
			b.pairErr(u.State, u.Phase, ErrInvalid, "pair declared unreachable in a transitional phase (intent is not consulted there)")
		}
		m.unreach[u] = true
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
	add := func(from, to int, kind edgeKind, state int) {
		for i := range m.edges {
			e := &m.edges[i]
			if e.from == from && e.to == to && e.kind == kind {
				if kind == ruleEdge {
					e.states = append(e.states, state)
				}
				return
			}
		}
		e := edge{from: from, to: to, kind: kind}
		if kind == ruleEdge {
			e.states = []int{state}
		}
		m.edges = append(m.edges, e)
	}
	for i, ps := range m.phases {
		for _, r := range m.def.Rules {
			if r.Phase == ps.Phase {
				add(i, m.phaseIx[r.Begin], ruleEdge, m.stateIx[r.State])
			}
		}
		if ps.Kind == Transitional {
			add(i, m.phaseIx[ps.Then], completionEdge, 0)
			if m.failure >= 0 {
				add(i, m.failure, failureEdge, 0)
			}
		}
	}
	for _, c := range m.def.Cycles {
		fi, fok := m.phaseIx[c.From]
		ti, tok := m.phaseIx[c.To]
		if !fok || !tok {
			b.phaseErr(c.From, ErrUnknownPhase, "sanctioned cycle %v → %v names an undeclared phase", c.From, c.To)
			continue
		}
		if !slices.ContainsFunc(m.edges, func(e edge) bool { return e.from == fi && e.to == ti && e.kind != failureEdge }) {
			b.phaseErr(c.From, ErrInvalid, "sanctioned cycle %v → %v is not a rule or completion edge", c.From, c.To)
			continue
		}
		if m.cycles[c] {
			b.phaseErr(c.From, ErrDuplicate, "cycle %v → %v sanctioned twice", c.From, c.To)
		}
		m.cycles[c] = true
	}

	// Every phase reachable from the initial phase, failures included.
	seen := b.reach([]int{m.initial}, func(edge) bool { return true })
	for i, ps := range m.phases {
		if !seen[i] {
			b.phaseErr(ps.Phase, ErrUnreachable, "no path from initial phase %v", m.phases[m.initial].Phase)
		}
	}
	// Points of no return: no path back without a sanctioned cycle.
	forward := func(e edge) bool {
		return e.kind != failureEdge && !m.cycles[Edge[P]{m.phases[e.from].Phase, m.phases[e.to].Phase}]
	}
	b.committed = make([]bool, len(m.phases))
	for i, ps := range m.phases {
		if !ps.NoReturn && ps.Kind != Terminal {
			continue
		}
		for j := range b.reach([]int{i}, forward) {
			b.committed[j] = true
		}
		if !ps.NoReturn {
			continue
		}
		if path := b.pathBack(i, forward); path != nil {
			b.phaseErr(ps.Phase, ErrNoReturn, "path %s leads back; remove it or declare a sanctioned cycle", b.phasePath(path))
		}
	}
	// Which intents each phase admits: outside the committed region all of them;
	// inside, those a settled pair can still be reached for.
	all := func(e edge) bool { return e.kind != failureEdge }
	m.admitted = make([][]bool, len(m.phases))
	for pi := range m.phases {
		m.admitted[pi] = make([]bool, len(m.states))
		reach := b.reach([]int{pi}, all)
		for si, s := range m.states {
			if !b.committed[pi] {
				m.admitted[pi][si] = true
				continue
			}
			for qi := range reach {
				if hasKey(m.settled, Pair[S, P]{s, m.phases[qi].Phase}) {
					m.admitted[pi][si] = true
					break
				}
			}
		}
	}
}

// reach returns the phases reachable from start (included) over edges ok accepts.
func (b *builder[S, P]) reach(start []int, ok func(edge) bool) map[int]bool {
	seen := map[int]bool{}
	queue := slices.Clone(start)
	for _, s := range start {
		seen[s] = true
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range b.m.edges {
			if e.from == cur && ok(e) && !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	return seen
}

// pathBack returns a shortest path from n back to n over edges ok accepts, or nil.
func (b *builder[S, P]) pathBack(n int, ok func(edge) bool) []int {
	prev := map[int]int{}
	queue := []int{n}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range b.m.edges {
			if e.from != cur || !ok(e) {
				continue
			}
			if e.to == n {
				path := []int{n}
				for at := cur; at != n; at = prev[at] {
					path = append(path, at)
				}
				path = append(path, n)
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[e.to]; !seen {
				prev[e.to] = cur
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}

func (b *builder[S, P]) phasePath(path []int) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(b.m.phases[p].Phase)
	}
	return strings.Join(parts, " → ")
}

// coverage checks that every pair in a resting or terminal phase is covered.
func (b *builder[S, P]) coverage() {
	m := b.m
	for pi, ps := range m.phases {
		if ps.Kind == Transitional || ps.Kind == Fault {
			continue // operations run regardless of intent; failures are held for an operator
		}
		for si, s := range m.states {
			pair := Pair[S, P]{s, ps.Phase}
			if hasKey(m.settled, pair) || hasKey(m.rules, pair) || m.unreach[pair] || !m.admitted[pi][si] {
				continue
			}
			if ps.Kind == Terminal {
				b.pairErr(s, ps.Phase, ErrUncovered, "terminal phase, intent still reachable, but the pair is not settled or declared unreachable")
				continue
			}
			b.pairErr(s, ps.Phase, ErrUncovered, "no settled pair, rule or unreachable declaration covers it; an object here would be stuck")
		}
	}
}

// progress checks that, with the intent held constant, every ruled pair and
// every transitional phase reaches a settled pair.
func (b *builder[S, P]) progress() {
	m := b.m
	for pi, ps := range m.phases {
		for si, s := range m.states {
			if !m.admitted[pi][si] {
				continue
			}
			if ps.Kind != Transitional && !hasKey(m.rules, Pair[S, P]{s, ps.Phase}) {
				continue
			}
			if path, why := b.simulate(si, pi); why != "" {
				b.pairErr(s, ps.Phase, ErrNoProgress, "path %s %s", b.phasePath(path), why)
			}
		}
	}
}

// simulate follows the machine from phase pi with intent si held constant and
// every step succeeding. It returns the path and, when no settled pair is
// reached, why.
func (b *builder[S, P]) simulate(si, pi int) ([]int, string) {
	m := b.m
	s := m.states[si]
	passed := make([]bool, len(m.phases))
	seen := map[string]bool{}
	path := []int{pi}
	cur := pi
	for {
		key := fmt.Sprint(cur, passed)
		if seen[key] {
			return path, "loops without settling"
		}
		seen[key] = true
		ps := m.phases[cur]
		if ps.Kind == Transitional {
			passed[cur] = true
			cur = m.phaseIx[ps.Then]
			path = append(path, cur)
			continue
		}
		pair := Pair[S, P]{s, ps.Phase}
		if st, ok := m.settled[pair]; ok && afterDone(st.After, func(p P) bool { return passed[m.phaseIx[p]] }) {
			return path, ""
		}
		if r, ok := m.rules[pair]; ok {
			cur = m.phaseIx[r.Begin]
			path = append(path, cur)
			continue
		}
		switch {
		case m.unreach[pair]:
			return path, fmt.Sprintf("reaches (%v, %v), declared unreachable", s, ps.Phase)
		case !m.admitted[cur][si]:
			return path, fmt.Sprintf("reaches %v, where intent %v is refused", ps.Phase, s)
		default:
			return path, fmt.Sprintf("reaches (%v, %v), which nothing settles", s, ps.Phase)
		}
	}
}

func afterDone[P comparable](after []P, passed func(P) bool) bool {
	for _, a := range after {
		if !passed(a) {
			return false
		}
	}
	return true
}
