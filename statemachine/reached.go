package statemachine

import (
	"errors"
	"fmt"
)

// ErrHeldInFault matches a [FaultError]: an object held in the machine's
// Fault phase, for an operator.
var ErrHeldInFault = errors.New("statemachine: held in the fault phase")

// FaultError reports that an object is held in the Fault phase of Machine:
// its intent is not reached, and will not be until an operator acts (or the
// intent changes to one the machine has a rule for there). It matches
// [ErrHeldInFault].
type FaultError[S, P comparable] struct {
	Machine string
	// Intent is the intent held, and Phase the Fault phase.
	Intent S
	Phase  P
	// Failure is the failure that moved the object there; nil when it
	// came there otherwise.
	Failure *Failure[P]
}

// Error names the phase, the intent and the failure.
func (e *FaultError[S, P]) Error() string {
	msg := fmt.Sprintf("statemachine: %s: intent %v held in phase %v", e.Machine, e.Intent, e.Phase)
	if f := e.Failure; f != nil {
		msg += fmt.Sprintf(": %v failed (%s) at step %q: %s", f.Operation.Phase, f.Cause, f.Step, f.Reason)
	}
	return msg
}

// Is reports whether target is [ErrHeldInFault].
func (e *FaultError[S, P]) Is(target error) bool { return target == ErrHeldInFault }

// Reached judges an object whose intent is intent and whose status, st,
// its controller wrote after it observed that intent. It returns true when
// the pair is settled and no operation runs; a [*RefusalError] when the
// status records the intent refused (st.Refused); a [*FaultError] when the
// object is held in the Fault phase; and false with no error while the
// machine still works towards the intent.
//
// Reached does not know whether the controller observed the intent: the
// caller compares the generation it wrote with st.ObservedGeneration
// first, or it judges the status of an older intent.
func (m *Machine[S, P]) Reached(intent S, st Status[S, P]) (bool, error) {
	if r := st.Refused; r != nil {
		return false, &RefusalError[S, P]{Machine: m.name, Intent: r.Intent, Phase: st.Phase, Reason: r.Reason}
	}
	pi, ok := m.phaseIx[st.Phase]
	if !ok {
		return false, &PhaseError[P]{Machine: m.name, Phase: st.Phase, Err: ErrUnknownPhase, Detail: "status phase is not a phase of the machine"}
	}
	pair := Pair[S, P]{intent, st.Phase}
	switch {
	case st.Operation != nil:
		return false, nil
	case hasKey(m.settled, pair):
		return true, nil
	case m.phases[pi].Type == Fault && !hasKey(m.rules, pair):
		return false, &FaultError[S, P]{Machine: m.name, Intent: intent, Phase: st.Phase, Failure: st.Failure}
	}
	return false, nil
}
