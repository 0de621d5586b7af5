package statemachine

import (
	"errors"
	"fmt"
)

// Sentinel errors. Build errors are wrapped in [PairError], [PhaseError] or
// [StateError] values joined with [errors.Join]; match them with [errors.Is]
// and read the offending pair or phase with [errors.As].
var (
	// ErrUnknownState: a state that the machine does not declare.
	ErrUnknownState = errors.New("statemachine: unknown state")
	// ErrUnknownPhase: a phase that the machine does not declare.
	ErrUnknownPhase = errors.New("statemachine: unknown phase")
	// ErrDuplicate: a state, phase, step or declaration given twice.
	ErrDuplicate = errors.New("statemachine: duplicate declaration")
	// ErrContradiction: two declarations contradict each other (a pair both
	// settled and ruled, a phase both Unbounded and given a deadline, …).
	ErrContradiction = errors.New("statemachine: conflicting declarations")
	// ErrUncovered: a (State, Phase) pair is neither settled, ruled nor declared
	// unreachable, so an object in it would be stuck forever.
	ErrUncovered = errors.New("statemachine: pair not covered")
	// ErrUnreachable: a phase cannot be reached from the initial phase.
	ErrUnreachable = errors.New("statemachine: phase unreachable from the initial phase")
	// ErrTerminalExit: a terminal phase has an exit.
	ErrTerminalExit = errors.New("statemachine: terminal phase has an exit")
	// ErrNoReturn: a path leads from a point of no return back to it without a
	// sanctioned cycle.
	ErrNoReturn = errors.New("statemachine: path leads back to a point of no return")
	// ErrIncomplete: a transitional phase lacks steps, a completion or a Then phase.
	ErrIncomplete = errors.New("statemachine: transitional phase incomplete")
	// ErrNoProgress: with the intent held constant, a pair can reach a
	// point from which no settled pair, declared refusal or (for any intent
	// but the final one) the Fault phase can be reached: a dead end, or a
	// loop that never settles. The error names the path.
	ErrNoProgress = errors.New("statemachine: pair never settles")
	// ErrInvalid: a declaration the machine cannot use (a rule in a transitional
	// phase, a rule beginning a resting phase, an empty step name, …).
	ErrInvalid = errors.New("statemachine: invalid declaration")

	// ErrIntentRefused: the machine declares the intent refused in the phase
	// the object is in. See [RefusalError].
	ErrIntentRefused = errors.New("statemachine: intent refused")
	// ErrTerminating: the object's deletion was requested, so its intent
	// is the machine's final state and a change of intent is refused. It
	// comes with [ErrIntentRefused].
	ErrTerminating = errors.New("statemachine: deletion requested")
	// ErrDeclaredUnreachable: an object is in a pair declared unreachable.
	ErrDeclaredUnreachable = errors.New("statemachine: pair declared unreachable was reached")
	// ErrStaleDecision: [Machine.Apply] was given a decision that does not match
	// the status it is applied to.
	ErrStaleDecision = errors.New("statemachine: decision does not match status")
	// ErrMissingID: a Begin decision was applied without an operation id.
	ErrMissingID = errors.New("statemachine: operation id missing")
	// ErrNoFaultPhase: a terminal failure was applied to a machine without a
	// Fault phase.
	ErrNoFaultPhase = errors.New("statemachine: machine has no fault phase")
)

// PairError reports a problem with one (State, Phase) pair.
type PairError[S, P comparable] struct {
	Machine string
	State   S
	Phase   P
	Err     error  // one of the package's sentinels
	Detail  string // human explanation
}

// Error names the machine, the pair and the problem.
func (e *PairError[S, P]) Error() string {
	return fmt.Sprintf("%s (State %v, Phase %v): %s: %v", e.Machine, e.State, e.Phase, e.Detail, e.Err)
}

// Unwrap returns the sentinel.
func (e *PairError[S, P]) Unwrap() error { return e.Err }

// PhaseError reports a problem with one phase.
type PhaseError[P comparable] struct {
	Machine string
	Phase   P
	Err     error
	Detail  string
}

// Error names the machine, the phase and the problem.
func (e *PhaseError[P]) Error() string {
	return fmt.Sprintf("%s (Phase %v): %s: %v", e.Machine, e.Phase, e.Detail, e.Err)
}

// Unwrap returns the sentinel.
func (e *PhaseError[P]) Unwrap() error { return e.Err }

// StateError reports a problem with one state.
type StateError[S comparable] struct {
	Machine string
	State   S
	Err     error
	Detail  string
}

// Error names the machine, the state and the problem.
func (e *StateError[S]) Error() string {
	return fmt.Sprintf("%s (State %v): %s: %v", e.Machine, e.State, e.Detail, e.Err)
}

// Unwrap returns the sentinel.
func (e *StateError[S]) Unwrap() error { return e.Err }

// RefusalError is returned by [Machine.Admit] (and set in
// [Decision.Refused]) when the machine declares an intent refused in Phase.
// It matches [ErrIntentRefused].
type RefusalError[S, P comparable] struct {
	Machine string
	Intent  S
	Phase   P
	// Reason is the declared refusal's reason.
	Reason string
	// Unreachable is set when the pair is declared unreachable rather than
	// refused.
	Unreachable bool
}

// Error names the refused intent, the phase that refuses it and why.
func (e *RefusalError[S, P]) Error() string {
	why := e.Reason
	if e.Unreachable {
		why = "the pair is declared unreachable"
	}
	return fmt.Sprintf("statemachine: %s: intent %v refused in phase %v: %s", e.Machine, e.Intent, e.Phase, why)
}

// Is reports whether target is [ErrIntentRefused].
func (e *RefusalError[S, P]) Is(target error) bool { return target == ErrIntentRefused }
