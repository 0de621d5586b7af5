package statemachine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Migrations declare how a status written by a previous version of a
// machine is carried onto this one (see [Machine.Carry]): states retired
// and the states that replace them, phases renamed, steps renamed or
// removed, and operations restarted or resumed at a named step when their
// checkpoint cannot be carried. Everything a new version merely adds (a
// phase, a step, a Fault phase, a request, a timer) needs no declaration.
type Migrations[S, P comparable] struct {
	// States maps each retired state to the state that replaces it: a
	// status holding the old one is carried to the new one, and a spec
	// still holding it is served as the new one.
	States []Rename[S] `json:"states,omitempty"`
	// Phases maps each renamed phase to its new name.
	Phases []Rename[P] `json:"phases,omitempty"`
	// Steps renames steps in operations' checkpoints; a step with an empty
	// To was removed, and is dropped from them.
	Steps []StepRename `json:"steps,omitempty"`
	// Resume restarts, or resumes at a named step, each operation in flight
	// in a phase whose checkpoint names steps the phase no longer declares.
	Resume []Resume[P] `json:"resume,omitempty"`
}

// Rename carries the retired value From to To, a value the machine
// declares.
type Rename[T comparable] struct {
	From T `json:"from"`
	To   T `json:"to"`
}

// StepRename renames the step From, which no phase declares any more, to
// To in the checkpoints of operations in flight; an empty To means the step
// was removed, and it is dropped from them.
type StepRename struct {
	From string `json:"from"`
	To   string `json:"to,omitempty"`
}

// Resume declares what becomes of an operation in flight in the
// transitional phase Phase whose checkpoint names steps the phase no longer
// declares: it resumes at the step At, the steps declared before it counted
// as done, or starts over when At is empty. Its id is kept; its failed
// attempts are forgotten.
type Resume[P comparable] struct {
	Phase P      `json:"phase"`
	At    string `json:"at,omitempty"`
}

func (m Migrations[S, P]) clone() Migrations[S, P] {
	return Migrations[S, P]{States: slices.Clone(m.States), Phases: slices.Clone(m.Phases),
		Steps: slices.Clone(m.Steps), Resume: slices.Clone(m.Resume)}
}

// ErrStranded is matched by a [*StrandedError]: documents hold a status
// that a machine cannot carry on, and its Migrations do not say how.
var ErrStranded = errors.New("statemachine: documents stranded by the machine")

// MaxStranded is the most documents a [StrandedError] lists; Total counts
// them all.
const MaxStranded = 100

// Strand says why one document's status cannot be carried onto a machine.
// States and phases are written as their String forms.
type Strand struct {
	// State is the document's intent and Phase the phase it is in, as stored.
	State string `json:"state"`
	Phase string `json:"phase"`
	// Operation is the id of the operation in flight, if any, and Step the
	// first step of its checkpoint the machine does not declare, if any.
	Operation string `json:"operation,omitempty"`
	Step      string `json:"step,omitempty"`
	// Reasons say what the machine does not know.
	Reasons []string `json:"reasons"`
}

// String renders the strand as "(State, Phase) operation/step: reasons".
func (s Strand) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "(%s, %s)", s.State, s.Phase)
	if s.Operation != "" {
		b.WriteString(" operation " + s.Operation)
		if s.Step != "" {
			b.WriteString(" at step " + s.Step)
		}
	}
	return b.String() + ": " + strings.Join(s.Reasons, "; ")
}

// StrandedDocument is a document whose status a machine cannot carry on.
type StrandedDocument struct {
	Key string `json:"key"`
	Strand
}

// StrandedError lists the documents of a kind that a machine cannot carry
// on: up to [MaxStranded] of them, in the order they were found, and how
// many there are in all. It matches [ErrStranded].
type StrandedError struct {
	// Kind is the documents' kind and Machine the machine's name.
	Kind    string `json:"kind"`
	Machine string `json:"machine"`
	// Documents are the first [MaxStranded] documents stranded.
	Documents []StrandedDocument `json:"documents"`
	// Total counts every document stranded.
	Total int `json:"total"`
}

// Add records the document key stranded as s, listing it while fewer than
// [MaxStranded] are listed.
func (e *StrandedError) Add(key string, s Strand) {
	e.Total++
	if len(e.Documents) < MaxStranded {
		e.Documents = append(e.Documents, StrandedDocument{Key: key, Strand: s})
	}
}

// Err returns e when it counts a document, and nil otherwise.
func (e *StrandedError) Err() error {
	if e == nil || e.Total == 0 {
		return nil
	}
	return e
}

// Error names the kind, the number of documents and the first of them.
func (e *StrandedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "statemachine: %d %s documents stranded by machine %s", e.Total, e.Kind, e.Machine)
	for i, d := range e.Documents {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", e.Total-3)
			break
		}
		fmt.Fprintf(&b, "; %s %s", d.Key, d.Strand)
	}
	return b.String()
}

// Is reports whether target is [ErrStranded].
func (e *StrandedError) Is(target error) bool { return target == ErrStranded }

// Version returns the machine's declared version.
func (m *Machine[S, P]) Version() int { return m.def.Version }

// CarryIntent returns the state that serves intent s: the state that
// replaces it when the machine declares s retired, s otherwise.
func (m *Machine[S, P]) CarryIntent(s S) S {
	if i := slices.IndexFunc(m.def.Migrations.States, func(r Rename[S]) bool { return r.From == s }); i >= 0 {
		return m.def.Migrations.States[i].To
	}
	return s
}

// carryPhase returns the phase that p is now, and whether the machine
// declares it.
func (m *Machine[S, P]) carryPhase(p P) (P, bool) {
	if i := slices.IndexFunc(m.def.Migrations.Phases, func(r Rename[P]) bool { return r.From == p }); i >= 0 {
		p = m.def.Migrations.Phases[i].To
	}
	_, ok := m.phaseIx[p]
	return p, ok
}

// carrySteps returns the checkpoint done with the declared step renames
// applied and the removed steps dropped.
func (m *Machine[S, P]) carrySteps(done []string) []string {
	var out []string
	for _, s := range done {
		if i := slices.IndexFunc(m.def.Migrations.Steps, func(r StepRename) bool { return r.From == s }); i >= 0 {
			s = m.def.Migrations.Steps[i].To
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Carry returns st, a status written by this or a previous version of the
// machine for a document whose spec holds intent, carried onto this
// machine, or, when it cannot be carried, the [*Strand] that says why.
// The intent only names the document in the Strand: whether it is a state
// of the machine is the driver's to judge (see [Machine.CarryIntent] and
// [Machine.ValidateIntent]).
//
// Carrying renames retired states and renamed phases and steps as
// [Definition.Migrations] declare, drops removed steps from checkpoints,
// applies a declared [Resume] to an operation whose checkpoint names steps
// its phase no longer declares, and forgets the due times of timers and the
// fully served tokens of requests the machine no longer declares. A status
// is stranded when, after that, its phase or adopted target is not
// declared, when its operation in flight runs in a phase no
// longer transitional or its checkpoint names undeclared steps, or when it
// holds tokens not served yet of a request no longer declared. A status
// never written (its phase the zero value, not a phase of the machine) is
// returned as it is. Carrying a carried status changes nothing.
func (m *Machine[S, P]) Carry(intent S, st Status[S, P]) (Status[S, P], *Strand) {
	var zeroP P
	if _, ok := m.phaseIx[st.Phase]; !ok && st.Phase == zeroP || m.fits(st) {
		return st, nil
	}
	out := st.clone()
	strand := Strand{State: fmt.Sprint(intent), Phase: fmt.Sprint(st.Phase)}
	why := func(format string, args ...any) {
		strand.Reasons = append(strand.Reasons, fmt.Sprintf(format, args...))
	}
	var zeroS S
	if out.Target != zeroS || hasKey(m.stateIx, zeroS) {
		out.Target = m.CarryIntent(out.Target)
		if _, ok := m.stateIx[out.Target]; !ok {
			why("target %v is not a state of the machine", st.Target)
		}
	}
	var known bool
	if out.Phase, known = m.carryPhase(out.Phase); !known {
		why("phase %v is not a phase of the machine", st.Phase)
	}
	if op := out.Operation; op != nil {
		strand.Operation = op.ID
		op.Phase, _ = m.carryPhase(op.Phase)
		op.From, _ = m.carryPhase(op.From)
		m.carryOperation(op, known && op.Phase == out.Phase, &strand, why)
	}
	if f := out.Failure; f != nil {
		if p, ok := m.carryPhase(f.Operation.Phase); ok {
			f.Operation.Phase = p
		}
		if p, ok := m.carryPhase(f.Operation.From); ok {
			f.Operation.From = p
		}
		f.Operation.Done = m.carrySteps(f.Operation.Done)
	}
	if r := out.Refused; r != nil {
		r.Intent = m.CarryIntent(r.Intent)
		if _, ok := m.stateIx[r.Intent]; !ok && r.Intent != intent {
			out.Refused = nil // decided again at the next decision
		}
	}
	out.Requests = slices.DeleteFunc(out.Requests, func(r RequestState) bool {
		if slices.ContainsFunc(m.def.Requests, func(d RequestRule[P]) bool { return d.Name == r.Name }) {
			return false
		}
		if p := r.pending(); len(p) > 0 {
			why("request %s is not a request of the machine, and tokens %s are not served", r.Name, strings.Join(p, ", "))
			return false
		}
		return true
	})
	out.Timers = slices.DeleteFunc(out.Timers, func(t TimerDue) bool {
		return !slices.ContainsFunc(m.def.Timers, func(d Timer[P]) bool { return d.Name == t.Name })
	})
	if len(strand.Reasons) > 0 {
		return st, &strand
	}
	return out, nil
}

// fits reports whether st names only what the machine declares, so that
// carrying it changes nothing (New checks that no migration renames a
// declared state, phase or step). It allocates nothing: a driver carries
// every status it reads.
func (m *Machine[S, P]) fits(st Status[S, P]) bool {
	var zeroS S
	var zeroP P
	phase := func(p P) bool { return hasKey(m.phaseIx, p) }
	state := func(s S) bool { return hasKey(m.stateIx, s) }
	if !phase(st.Phase) || st.Target != zeroS && !state(st.Target) || st.Refused != nil && !state(st.Refused.Intent) {
		return false
	}
	if op := st.Operation; op != nil {
		if !phase(op.Phase) || op.From != zeroP && !phase(op.From) {
			return false
		}
		if ps := m.phases[m.phaseIx[op.Phase]]; op.Phase == st.Phase {
			if ps.Type != Transitional {
				return false
			}
			for _, s := range op.Done {
				if !slices.Contains(ps.Steps, s) {
					return false
				}
			}
		}
	}
	if f := st.Failure; f != nil {
		if !phase(f.Operation.Phase) || f.Operation.From != zeroP && !phase(f.Operation.From) {
			return false
		}
		for _, s := range f.Operation.Done {
			if !m.isStep(s) {
				return false
			}
		}
	}
	for _, r := range st.Requests {
		if !slices.ContainsFunc(m.def.Requests, func(d RequestRule[P]) bool { return d.Name == r.Name }) {
			return false
		}
	}
	for _, t := range st.Timers {
		if !slices.ContainsFunc(m.def.Timers, func(d Timer[P]) bool { return d.Name == t.Name }) {
			return false
		}
	}
	return true
}

// isStep reports whether some phase declares the step name.
func (m *Machine[S, P]) isStep(name string) bool {
	for _, ps := range m.phases {
		if slices.Contains(ps.Steps, name) {
			return true
		}
	}
	return false
}

// carryOperation carries op, the operation in flight, onto the machine;
// current says whether it is the operation of the status's phase.
func (m *Machine[S, P]) carryOperation(op *Operation[P], current bool, strand *Strand, why func(string, ...any)) {
	if !current {
		return // not the phase's operation: the phase begins its own
	}
	ps := m.phases[m.phaseIx[op.Phase]]
	if ps.Type != Transitional {
		why("operation %s runs in phase %v, which is no longer transitional", op.ID, op.Phase)
		return
	}
	op.Done = m.carrySteps(op.Done)
	var unknown []string
	for _, s := range op.Done {
		if !slices.Contains(ps.Steps, s) {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) == 0 {
		return
	}
	i := slices.IndexFunc(m.def.Migrations.Resume, func(r Resume[P]) bool { return r.Phase == op.Phase })
	if i < 0 {
		strand.Step = unknown[0]
		why("the checkpoint of operation %s names steps phase %v does not declare: %s", op.ID, op.Phase, strings.Join(unknown, ", "))
		return
	}
	at := m.def.Migrations.Resume[i].At
	op.Done = nil
	if at != "" {
		op.Done = slices.Clone(ps.Steps[:slices.Index(ps.Steps, at)])
	}
	op.Attempts, op.LastError, op.RetryAt = 0, "", time.Time{}
}

// migrations checks the definition's Migrations.
func (b *builder[S, P]) migrations(mig Migrations[S, P]) {
	m := b.m
	seenS := map[S]bool{}
	for _, r := range mig.States {
		switch {
		case hasKey(m.stateIx, r.From):
			b.stateErr(r.From, ErrInvalid, "retired state is still declared")
		case seenS[r.From]:
			b.stateErr(r.From, ErrDuplicate, "state retired twice")
		case !hasKey(m.stateIx, r.To):
			b.stateErr(r.To, ErrUnknownState, "retired state %v is carried to an undeclared state", r.From)
		}
		seenS[r.From] = true
	}
	seenP := map[P]bool{}
	for _, r := range mig.Phases {
		switch {
		case hasKey(m.phaseIx, r.From):
			b.phaseErr(r.From, ErrInvalid, "renamed phase is still declared")
		case seenP[r.From]:
			b.phaseErr(r.From, ErrDuplicate, "phase renamed twice")
		case !hasKey(m.phaseIx, r.To):
			b.phaseErr(r.To, ErrUnknownPhase, "phase %v is renamed to an undeclared phase", r.From)
		}
		seenP[r.From] = true
	}
	steps := m.stepSet()
	seen := map[string]bool{}
	for _, r := range mig.Steps {
		switch {
		case r.From == "" || steps[r.From]:
			b.errs = append(b.errs, fmt.Errorf("%s: step %q is renamed or removed but is empty or still declared: %w", m.name, r.From, ErrInvalid))
		case seen[r.From]:
			b.errs = append(b.errs, fmt.Errorf("%s: step %q is renamed or removed twice: %w", m.name, r.From, ErrDuplicate))
		case r.To != "" && !steps[r.To]:
			b.errs = append(b.errs, fmt.Errorf("%s: step %q is renamed to %q, which no phase declares: %w", m.name, r.From, r.To, ErrInvalid))
		}
		seen[r.From] = true
	}
	seenP = map[P]bool{}
	for _, r := range mig.Resume {
		i, ok := m.phaseIx[r.Phase]
		switch {
		case !ok:
			b.phaseErr(r.Phase, ErrUnknownPhase, "resume names an undeclared phase")
		case m.phases[i].Type != Transitional:
			b.phaseErr(r.Phase, ErrInvalid, "resume names a phase that is not transitional")
		case seenP[r.Phase]:
			b.phaseErr(r.Phase, ErrDuplicate, "resume declared twice")
		case r.At != "" && !slices.Contains(m.phases[i].Steps, r.At):
			b.phaseErr(r.Phase, ErrInvalid, "resume at step %q, which the phase does not declare", r.At)
		}
		seenP[r.Phase] = true
	}
}

// stepSet returns the name of every step of every phase.
func (m *Machine[S, P]) stepSet() map[string]bool {
	out := map[string]bool{}
	for _, ps := range m.phases {
		for _, s := range ps.Steps {
			out[s] = true
		}
	}
	return out
}
