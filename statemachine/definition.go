package statemachine

import "strconv"

// PhaseKind says how a machine treats a phase.
type PhaseKind int

const (
	// Resting phases wait for intent: in them each (State, Phase) pair is settled,
	// ruled, or declared unreachable. Resting is the zero value.
	Resting PhaseKind = iota
	// Transitional phases are operations: they run their steps in order, then wait
	// for their completion requirements and move to their Then phase. Intent is not
	// consulted while a transitional phase is in progress (operations are never
	// pre-empted).
	Transitional
	// Terminal phases have no exits.
	Terminal
	// Fault is the resting phase where terminal step failures land, for an
	// operator. Pairs in it that are neither settled nor ruled are held. A machine
	// has at most one Fault phase.
	Fault
)

// String returns the kind's name.
func (k PhaseKind) String() string {
	switch k {
	case Resting:
		return "resting"
	case Transitional:
		return "transitional"
	case Terminal:
		return "terminal"
	case Fault:
		return "fault"
	}
	return "PhaseKind(" + strconv.Itoa(int(k)) + ")"
}

// Definition declares a machine as data. [New] checks it and builds a [Machine].
// Every slice is read in order; order is kept in diagrams and error lists.
type Definition[S, P comparable] struct {
	// Name names the machine in errors and diagrams (for example "ApiGateway").
	Name string
	// States lists every intent a user may request.
	States []S
	// Phases declares every phase of the system's progress.
	Phases []PhaseSpec[P]
	// Initial is the phase of a new object.
	Initial P
	// Settled lists the pairs where the intent is reached and nothing is to be done.
	Settled []Settle[S, P]
	// Rules list what each unsettled pair begins.
	Rules []Rule[S, P]
	// Unreachable lists pairs that cannot occur; reaching one is reported as an
	// error by [Machine.Decide].
	Unreachable []Pair[S, P]
	// Cycles sanctions edges that lead out of a point of no return back into
	// earlier phases (a RuntimeDomain's Deleted → Creating on restart). Each must
	// be an edge of a rule or a completion.
	Cycles []Edge[P]
}

// PhaseSpec declares one phase.
type PhaseSpec[P comparable] struct {
	// Phase is the phase being declared.
	Phase P
	// Kind says how the phase is treated; the zero value is Resting.
	Kind PhaseKind
	// NoReturn marks a point of no return: no path from it may lead back to it,
	// except through a sanctioned cycle, and an intent that can no longer be
	// reached from it is refused.
	NoReturn bool
	// Steps are the ordered, named sub-steps of a transitional phase. The machine
	// never runs them: a controller maps each name to an idempotent action.
	Steps []string
	// Completion lists the observed conditions that must all hold, after every
	// step is done, for a transitional phase to complete.
	Completion []Require
	// Then is the phase a transitional phase moves to on completion.
	Then P
}

// Require is one requirement on an observed condition: the condition named
// Condition must have been observed with status Status.
type Require struct {
	Condition string
	Status    bool
}

// Is requires the named condition to be observed true.
func Is(condition string) Require { return Require{Condition: condition, Status: true} }

// Not requires the named condition to be observed false.
func Not(condition string) Require { return Require{Condition: condition, Status: false} }

// String renders the requirement as "name" or "!name".
func (r Require) String() string {
	if r.Status {
		return r.Condition
	}
	return "!" + r.Condition
}

// Pair is a (State, Phase) pair: an intent and the phase an object is in.
type Pair[S, P comparable] struct {
	State S
	Phase P
}

// Settle declares a settled pair: intent State is reached in Phase.
type Settle[S, P comparable] struct {
	State S
	Phase P
	// After makes the pair settled only once each listed transitional phase has
	// completed since the machine adopted State as its target. Until then the
	// pair's rule applies, so a pair with After must also have a rule. This
	// expresses "one stop-then-start cycle" for a Restarting intent.
	After []P
	// Final marks the end of an object's life: a controller may remove the
	// document once this pair is settled.
	Final bool
}

// Rule declares that intent State in resting Phase begins transitional phase Begin.
type Rule[S, P comparable] struct {
	State S
	Phase P
	Begin P
}

// Edge is a directed edge between two phases.
type Edge[P comparable] struct {
	From P
	To   P
}
