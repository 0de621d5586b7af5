package statemachine

import (
	"strconv"
	"time"
)

// PhaseType says how a machine treats a phase.
type PhaseType int

const (
	// Resting phases wait for intent: in them each (State, Phase) pair is settled,
	// ruled, or declared unreachable. Resting is the zero value.
	Resting PhaseType = iota
	// Transitional phases are operations: they run their steps in order, then wait
	// for their completion requirements and move to their Then phase. An
	// operation is bounded (see [Bounds]): past its deadline, or when a step
	// has used up its attempts, it moves to its FailTo phase. A changed
	// intent does not pre-empt it unless the machine declares an [Abort], and
	// then only between two steps, never inside one.
	Transitional
	// Terminal phases have no exits.
	Terminal
	// Fault is the resting phase where failures land: terminal step failures,
	// and operations past their deadline or out of attempts (unless their
	// phase declares another FailTo). Pairs in it that are neither settled nor
	// ruled are held for an operator, except the final intent's: a machine
	// with a final pair must say what its final intent does in the Fault
	// phase (a rule, or a declared refusal). A machine has at most one Fault
	// phase.
	Fault
)

// String returns the kind's name.
func (k PhaseType) String() string {
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
	return "PhaseType(" + strconv.Itoa(int(k)) + ")"
}

// Definition declares a machine as data. [New] checks it and builds a [Machine].
// Every slice is read in order; order is kept in diagrams and error lists.
type Definition[S, P comparable] struct {
	// Name names the machine in errors and diagrams (for example "ApiGateway").
	Name string `json:"name"`
	// States lists every intent a user may request.
	States []S `json:"states,omitempty"`
	// Phases declares every phase of the system's progress.
	Phases []PhaseSpec[P] `json:"phases,omitempty"`
	// Initial is the phase of a new object.
	Initial P `json:"initial"`
	// Settled lists the pairs where the intent is reached and nothing is to be done.
	Settled []Settle[S, P] `json:"settled,omitempty"`
	// Rules list what each unsettled pair begins.
	Rules []Rule[S, P] `json:"rules,omitempty"`
	// Refusals declare the intents the machine refuses in some phases, each
	// with the reason users are told. A refusal is only ever declared: a pair
	// that no rule, settlement or refusal covers does not build.
	Refusals []RefusalRule[S, P] `json:"refusals,omitempty"`
	// Aborts declare which changes of intent stop a running operation at its
	// next step boundary. Without one, a changed intent waits for the
	// operation to complete or to run out of its bounds.
	Aborts []AbortRule[S, P] `json:"aborts,omitempty"`
	// Requests declare the one-shot requests the machine serves (restart,
	// renew, rotate credentials), beside the intent.
	Requests []RequestRule[P] `json:"requests,omitempty"`
	// Timers declare the operations a settled object begins because time
	// passed (renew a certificate before it expires).
	Timers []Timer[P] `json:"timers,omitempty"`
	// Unreachable lists pairs that cannot occur; reaching one is reported as an
	// error by [Machine.Decide].
	Unreachable []Pair[S, P] `json:"unreachable,omitempty"`
	// Bounds are the bounds of every transitional phase that does not set
	// its own (see [PhaseSpec.Bounds]). A zero field means the package
	// default ([DefaultDeadline], [DefaultStepTimeout], no attempt cap), so
	// every operation of a machine that declares nothing still ends.
	Bounds Bounds `json:"bounds,omitzero"`
	// Cycles sanctions edges that lead out of a point of no return back into
	// earlier phases (a RuntimeDomain's Deleted → Creating on restart). Each must
	// be an edge of a rule or a completion.
	Cycles []Edge[P] `json:"cycles,omitempty"`

	// Version numbers the machine's releases: a new release of a machine
	// that changes it declares a higher version. A Manager (package
	// manager) running an older version of the machine stands down for
	// the kind once a newer one is registered. Zero is the first.
	Version int `json:"version,omitempty"`
	// Migrations declare how the status a previous version of the
	// machine wrote is carried onto this one (see [Machine.Carry]).
	Migrations Migrations[S, P] `json:"migrations,omitzero"`
	// Errors declare classes of step errors: final, or retried on a
	// schedule of their own (see [ErrorClass] and [Machine.Classify]).
	Errors []ErrorClass `json:"errors,omitempty"`
}

// PhaseSpec declares one phase.
type PhaseSpec[P comparable] struct {
	// Phase is the phase being declared.
	Phase P `json:"phase"`
	// Type says how the phase is treated; the zero value is Resting.
	Type PhaseType `json:"kind,omitempty"`
	// NoReturn marks a point of no return: no path from it may lead back to it,
	// except through a sanctioned cycle, and an intent that can no longer be
	// reached from it is refused.
	NoReturn bool `json:"noReturn,omitempty"`
	// Steps are the ordered, named sub-steps of a transitional phase. The machine
	// never runs them: a controller maps each name to an idempotent action.
	Steps []string `json:"steps,omitempty"`
	// Completion lists the observed conditions that must all hold, after every
	// step is done, for a transitional phase to complete.
	Completion []Require `json:"completion,omitempty"`
	// Then is the phase a transitional phase moves to on completion.
	Then P `json:"then,omitempty"`
	// Bounds bound a transitional phase; a zero field means the
	// definition's [Definition.Bounds].
	Bounds Bounds `json:"bounds,omitzero"`
	// FailTo is the phase a transitional phase moves to when it runs past its
	// deadline or a step uses up its attempts. The zero value means the
	// machine's Fault phase. A transitional phase of a machine without a
	// Fault phase must declare FailTo or be Unbounded.
	FailTo P `json:"failTo,omitempty"`
	// Unbounded says, explicitly, that the phase waits without limit: no
	// deadline and no attempt cap (a step call is still bounded by its
	// timeout). Only for operations that must never be given up.
	Unbounded bool `json:"unbounded,omitempty"`

	// Health lists the conditions that must keep holding while an object
	// rests settled in this resting phase (the Deployment of a Started
	// gateway is available). A controller observes them again every
	// HealthEvery; when one stops holding (drift), Repair begins.
	Health []Require `json:"health,omitempty"`
	// Repair is the transitional phase that repairs drift from Health.
	Repair P `json:"repair,omitempty"`
	// HealthEvery is how often a controller observes Health again. Zero
	// means [DefaultHealthEvery].
	HealthEvery time.Duration `json:"healthEvery,omitempty"`
}

// DefaultHealthEvery is how often a controller observes a phase's Health
// conditions when the phase does not say.
const DefaultHealthEvery = time.Minute

// RequestRule declares the one-shot request Name: a token the object's spec
// carries (a restart requested at some time, a rotation asked for by id)
// that the machine serves once, beside the intent. A request is served only
// while the object rests settled in its intent; until then it waits. Its
// token counts as served when the operation serving it completes, in the same
// write, so a crash before that serves it again (operations are idempotent)
// and a token is never lost or served twice.
type RequestRule[P comparable] struct {
	Name string `json:"name"`
	// Serve maps each resting phase that can serve the request to the
	// transitional phase that does: begun for the request where the object
	// rests settled, and serving it too where the intent's rule begins that
	// same phase anyway (restarting a stopped gateway only starts it).
	Serve []Edge[P] `json:"serve,omitempty"`
	// Moot lists resting phases where a pending request counts as served
	// without any operation (restarting a gateway that is stopped only
	// starts it, which its intent does anyway).
	Moot []P `json:"moot,omitempty"`
	// Refuse lists resting phases where a pending request is refused: its
	// tokens count as served and Reason is recorded with them. In any other
	// phase the request waits.
	Refuse []P `json:"refuse,omitempty"`
	// Reason tells users why the request was refused.
	Reason string `json:"reason,omitempty"`
	// Queue serves each token in turn. Otherwise tokens written back to back
	// are coalesced: one operation serves every pending token.
	Queue bool `json:"queue,omitempty"`
}

// Timer declares that an object resting settled in Phase begins Begin once
// the timer is due: After it entered the phase, or, when After is zero, at
// a time a controller computes from the object and records in
// Status.Timers (the certificate's expiry less 30 days). The due time comes
// from status, so a timer survives restarts. Timers never change the intent.
type Timer[P comparable] struct {
	Name  string        `json:"name"`
	Phase P             `json:"phase"`
	After time.Duration `json:"after,omitempty"`
	Begin P             `json:"begin"`
}

// Defaults of [Bounds].
const (
	// DefaultDeadline bounds a transitional phase whose machine sets no
	// deadline.
	DefaultDeadline = time.Hour
	// DefaultStepTimeout bounds one call of a step whose machine sets no
	// timeout.
	DefaultStepTimeout = 10 * time.Minute
)

// Bounds bound an operation, so that one that never completes ends in its
// FailTo phase with the reason recorded instead of running for ever.
type Bounds struct {
	// Deadline bounds the whole of a transitional phase, from the write that
	// began it: once it has passed, the operation moves to FailTo at its next
	// decision. Zero means the next level's value (the definition's, then
	// [DefaultDeadline]).
	Deadline time.Duration `json:"deadline,omitempty"`
	// MaxAttempts caps the consecutive failed attempts of one step: the
	// attempt that reaches it moves the operation to FailTo. Zero means the
	// definition's value, and there no cap (the deadline bounds retries).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// StepTimeout bounds one call of a step: a controller cancels the step's
	// context after it and counts the call as a failed attempt. Zero means
	// the next level's value (the definition's, then [DefaultStepTimeout]).
	StepTimeout time.Duration `json:"stepTimeout,omitempty"`
}

// RefusalRule declares that the machine refuses each of States in each of Phases:
// [Machine.Admit] refuses to let such an intent be written, and one written
// anyway is reported (with Reason) while the machine keeps serving the intent
// it adopted last. A refused pair counts as an end for the build's liveness
// check.
type RefusalRule[S, P comparable] struct {
	States []S `json:"states,omitempty"`
	Phases []P `json:"phases,omitempty"`
	// Reason tells users why; required.
	Reason string `json:"reason,omitempty"`
}

// AbortRule declares that intent State, found while transitional phase Phase
// runs, stops the operation at its next step boundary (never inside a step)
// and moves to phase To, beginning it when it is transitional. This is how
// deletion ends an operation stuck waiting for something that never comes.
type AbortRule[S, P comparable] struct {
	State S `json:"state"`
	Phase P `json:"phase"`
	To    P `json:"to"`
}

// Require is one requirement on an observed condition: the condition named
// Condition must have been observed with status Status.
type Require struct {
	Condition string `json:"condition"`
	Status    bool   `json:"status"`
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
	State S `json:"state"`
	Phase P `json:"phase"`
}

// Settle declares a settled pair: intent State is reached in Phase.
type Settle[S, P comparable] struct {
	State S `json:"state"`
	Phase P `json:"phase"`
	// Final marks the end of an object's life: a controller may remove the
	// document once this pair is settled.
	Final bool `json:"final,omitempty"`
}

// Rule declares that intent State in resting Phase begins transitional phase Begin.
type Rule[S, P comparable] struct {
	State S `json:"state"`
	Phase P `json:"phase"`
	Begin P `json:"begin"`
}

// Edge is a directed edge between two phases.
type Edge[P comparable] struct {
	From P `json:"from"`
	To   P `json:"to"`
}
