package statemachine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Status is the machine's part of a document's status: what a controller
// persists, in one store write, after every decision that changes it. It is a
// plain struct with stable JSON tags so that users embed it in their own status
// type. [Machine.Apply] never modifies the Status it is given; it returns a copy.
type Status[S, P comparable] struct {
	// Phase is the system's progress.
	Phase P `json:"phase"`
	// Target is the intent the machine last adopted: the intent the current run
	// of operations serves. It differs from the user's intent only until the
	// machine acts on a changed intent, or while a refused intent is ignored.
	Target S `json:"target"`
	// Since is when the object entered Phase: timers count from it, and so
	// does the deadline of the operation a transitional phase runs (begun or
	// resumed as the phase was entered).
	Since time.Time `json:"since,omitzero"`
	// Operation is the operation in flight (nil when the phase is not
	// transitional). There is at most one per object.
	Operation *Operation[P] `json:"operation,omitempty"`
	// Conditions are the observed facts completions are judged from.
	Conditions []Condition `json:"conditions,omitempty"`
	// Failure records the failure that moved the object out of its last
	// operation (a terminal step failure, a deadline, attempts used up). It
	// is cleared when the next operation begins.
	Failure *Failure[P] `json:"failure,omitempty"`
	// Refused is set while the user's intent is refused in the current phase
	// (see [RefusalRule]): the intent and the machine's reason.
	Refused *Refusal[S] `json:"refused,omitempty"`
	// ObservedGeneration is the generation of the spec the controller last
	// decided on, and ObservedDeletion whether it had seen the object's
	// deletion requested: a controller records them, and retries a failed
	// step at once, whatever its RetryAt, when either has changed since. The
	// machine never reads them.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	ObservedDeletion   bool  `json:"observedDeletion,omitempty"`
	// Requests hold, per one-shot request, the tokens the spec carries and
	// those served (see [Status.Request]).
	Requests []RequestState `json:"requests,omitempty"`
	// Timers hold the due times a controller computed from the object for
	// the timers that have no After (see [Status.Due]).
	Timers []TimerDue `json:"timers,omitempty"`
	// Paused is set while an operator holds the object: its controller
	// runs no step and makes no decision for it until the hold is lifted.
	// Operators set and clear it (see package oncall); the machine never
	// reads it.
	Paused *Pause `json:"paused,omitempty"`
	// Commands are operator commands its controller has not carried out
	// yet, oldest first. Operators append them; the controller removes
	// each in the write that carries it out (or refuses it). The machine
	// never reads them.
	Commands []Command `json:"commands,omitempty"`
}

// Pause is an operator's hold on an object (see [Status.Paused]).
type Pause struct {
	// By names the oncall.
	By string `json:"by,omitempty"`
	// Reason says why, for the other operators.
	Reason string `json:"reason,omitempty"`
	// At is when the hold began.
	At time.Time `json:"at,omitzero"`
}

// Verb is what a [Command] asks its controller to do. [Machine.ApplyCommands]
// carries the verbs out, and says when each is refused.
type Verb string

// The verbs of operator commands.
const (
	// VerbRetry: run the failed step again now, without waiting for its
	// backoff, and forget its failed attempts; from Fault, while the
	// machine holds the object there, begin the failed operation again
	// from its checkpoint (same id, steps done kept, attempts forgotten).
	VerbRetry Verb = "retry"
	// VerbSkip: count the step Command.Step, the step that failed, as
	// done, and go on with the next; from Fault, while the machine holds
	// the object there, resume the failed operation after it.
	VerbSkip Verb = "skip"
	// VerbMove: leave Fault for the phase Command.Phase, a phase the
	// machine declares that is not transitional and where the intent is
	// neither refused nor declared unreachable; the failure is cleared.
	VerbMove Verb = "move"
	// VerbRequest: serve the machine's one-shot request Command.Request
	// once, as if the spec carried a new token for it (the command's ID);
	// the command stays in Status.Commands until that token is served.
	VerbRequest Verb = "request"
)

// Command is an operator's command to the object's controller (see
// [Status.Commands]). Phases are written as their String form, as in a
// [Descriptor].
type Command struct {
	// ID identifies the command, unique for the object; the history entry
	// recording its outcome carries it.
	ID   string `json:"id"`
	Verb Verb   `json:"verb"`
	// Step is the step VerbSkip skips.
	Step string `json:"step,omitempty"`
	// Phase is the phase VerbMove moves to.
	Phase string `json:"phase,omitempty"`
	// Request is the request VerbRequest asks for.
	Request string `json:"request,omitempty"`
	// By names the operator, Reason says why, At is when it was issued.
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// RequestState is one request's tokens: as the spec carries them, oldest
// first, and those of them already served.
type RequestState struct {
	Name   string   `json:"name"`
	Tokens []string `json:"tokens,omitempty"`
	Served []string `json:"served,omitempty"`
	// Refused is the reason the last tokens served were refused, if they were.
	Refused string `json:"refused,omitempty"`
}

// pending returns the request's tokens not served yet, in order.
func (r RequestState) pending() []string {
	var out []string
	for _, t := range r.Tokens {
		if !slices.Contains(r.Served, t) {
			out = append(out, t)
		}
	}
	return out
}

// TimerDue is when a timer computed from the object is due, and whether it
// fired for that time: it fires once per due time.
type TimerDue struct {
	Name  string    `json:"name"`
	At    time.Time `json:"at"`
	Fired bool      `json:"fired,omitempty"`
}

// Refusal is an intent the machine refuses in the current phase, and why.
type Refusal[S comparable] struct {
	Intent S      `json:"intent"`
	Reason string `json:"reason"`
}

// Operation is an operation in flight: the run of one transitional phase.
type Operation[P comparable] struct {
	// ID identifies the operation. It is recorded (persisted) before any step
	// runs and is the same on every retry, so non-idempotent actions (an upload
	// under {object}/{id}/…) can key on it.
	ID string `json:"id"`
	// Phase is the transitional phase the operation drives (its kind).
	Phase P `json:"phase"`
	// From is the phase the operation began from.
	From P `json:"from"`
	// Done is the checkpoint: the names of the steps already done, in order. The
	// next step is the first declared step not in Done.
	Done []string `json:"done,omitempty"`
	// Attempts counts consecutive failed attempts of the current step; a
	// controller derives its backoff from it. Reset by progress.
	Attempts int `json:"attempts,omitempty"`
	// LastError is the message of the last failed attempt.
	LastError string `json:"lastError,omitempty"`
	// ErrorClass names the [ErrorClass] of the last failed attempt's
	// error; empty when no class of the machine matched it.
	ErrorClass string `json:"errorClass,omitempty"`
	// RetryAt is when the step that failed last may run again: the backoff,
	// kept in status so that a restart, a failover or an unrelated event
	// does not retry it early. Zero after progress.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// Trigger says what began the operation: "intent Running", "request
	// restart", "timer renew", "drift instance_available", "abort", …
	Trigger string `json:"trigger,omitempty"`
	// Request is the request the operation serves, with the tokens it
	// serves; they count as served when it completes.
	Request string   `json:"request,omitempty"`
	Tokens  []string `json:"tokens,omitempty"`
}

// Failure records why an operation was given up, for an oncall.
type Failure[P comparable] struct {
	// Operation is the operation that failed, as it was when it failed. An
	// operation that begins its phase again from the failure's phase resumes
	// it: same id, checkpoint and failure count.
	Operation Operation[P] `json:"operation"`
	// Step is the step that failed, or the step the operation was at when its
	// deadline passed (empty when it was waiting for its completion).
	Step string `json:"step,omitempty"`
	// Cause says how the operation failed.
	Cause Cause `json:"cause"`
	// Reason is the failure's message.
	Reason string `json:"reason"`
	// At is when it failed.
	At time.Time `json:"at,omitzero"`
}

// Cause is how an operation failed.
type Cause string

// The causes of a [Failure].
const (
	// CauseTerminal: a step failed terminally.
	CauseTerminal Cause = "terminal"
	// CauseDeadline: the phase ran past its deadline.
	CauseDeadline Cause = "deadline"
	// CauseAttempts: a step used up its attempts.
	CauseAttempts Cause = "attempts"
)

// Condition is a named, observed fact (volume_ready, container_ready…).
type Condition struct {
	Name   string `json:"name"`
	Status bool   `json:"status"`
	// Reason is a short explanation from the observer.
	Reason string `json:"reason,omitempty"`
	// LastTransition is when Status last changed (or was first observed). The
	// time comes from the caller: the machine never reads a clock.
	LastTransition time.Time `json:"lastTransition"`
	// Phase is the phase the condition was last observed in, as fmt.Sprint
	// prints it, and PhaseSince when that phase began (the status's Since
	// then): see [Condition.Stale].
	Phase      string    `json:"phase,omitempty"`
	PhaseSince time.Time `json:"phaseSince,omitzero"`
	// ObservedAt is when the condition was last observed, as of the last
	// status write.
	ObservedAt time.Time `json:"observedAt,omitzero"`
}

// Stale reports whether c was last observed in an earlier phase than the
// one that began at since (the status's Since): what it says may no longer
// hold. A condition recorded before conditions carried their phase is not
// stale.
func (c Condition) Stale(since time.Time) bool {
	return !c.PhaseSince.IsZero() && c.PhaseSince.Before(since)
}

// Observation is one fresh observation of a condition, given to [Status.Observe].
type Observation struct {
	Name   string
	Status bool
	Reason string
}

// MachineStatus returns s itself. A user's status type that embeds Status
// gets this method by promotion, which is how a controller finds the machine's
// part of a larger status:
//
//	type GatewayStatus struct {
//		statemachine.Status[State, Phase]
//		Endpoint string `json:"endpoint,omitempty"`
//	}
func (s *Status[S, P]) MachineStatus() *Status[S, P] { return s }

// Condition returns the condition named name and whether it was ever observed.
func (s Status[S, P]) Condition(name string) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Name == name {
			return c, true
		}
	}
	return Condition{}, false
}

// Observe returns a copy of s with the observations recorded, sharing with s
// everything but its conditions. A condition's LastTransition is set to now
// when it is new or its Status changed; otherwise only its Reason is
// updated. Each observed condition's ObservedAt is set to now, and its Phase
// and PhaseSince to s's. Conditions stay sorted by name.
func (s Status[S, P]) Observe(now time.Time, obs ...Observation) Status[S, P] {
	out := s // only the conditions change: they are copied, the rest is shared
	out.Conditions = slices.Grow(slices.Clone(s.Conditions), len(obs))
	for _, o := range obs {
		i, found := slices.BinarySearchFunc(out.Conditions, o.Name, func(c Condition, n string) int {
			switch {
			case c.Name < n:
				return -1
			case c.Name > n:
				return 1
			}
			return 0
		})
		if !found {
			out.Conditions = slices.Insert(out.Conditions, i, Condition{Name: o.Name, Status: o.Status, Reason: o.Reason, LastTransition: now})
		}
		c := &out.Conditions[i]
		c.Phase, c.PhaseSince, c.ObservedAt = fmt.Sprint(s.Phase), s.Since, now
		if c.Status != o.Status {
			c.Status = o.Status
			c.LastTransition = now
		}
		c.Reason = o.Reason
	}
	return out
}

// Equal reports whether s and o hold the same values; a controller uses it to
// skip a store write when a decision changed nothing.
func (s Status[S, P]) Equal(o Status[S, P]) bool {
	return s.Phase == o.Phase && s.Target == o.Target &&
		s.Since.Equal(o.Since) &&
		equalPtr(s.Operation, o.Operation, Operation[P].equal) &&
		slices.EqualFunc(s.Conditions, o.Conditions, func(a, b Condition) bool {
			return a.Name == b.Name && a.Status == b.Status && a.Reason == b.Reason && a.LastTransition.Equal(b.LastTransition) &&
				a.Phase == b.Phase && a.PhaseSince.Equal(b.PhaseSince) // not ObservedAt: observing alone writes nothing
		}) &&
		equalPtr(s.Failure, o.Failure, func(a, b Failure[P]) bool {
			return a.Step == b.Step && a.Cause == b.Cause && a.Reason == b.Reason && a.At.Equal(b.At) &&
				a.Operation.equal(b.Operation)
		}) &&
		equalPtr(s.Refused, o.Refused, func(a, b Refusal[S]) bool { return a == b }) &&
		s.ObservedGeneration == o.ObservedGeneration && s.ObservedDeletion == o.ObservedDeletion &&
		slices.EqualFunc(s.Requests, o.Requests, func(a, b RequestState) bool {
			return a.Name == b.Name && a.Refused == b.Refused && slices.Equal(a.Tokens, b.Tokens) && slices.Equal(a.Served, b.Served)
		}) &&
		slices.EqualFunc(s.Timers, o.Timers, func(a, b TimerDue) bool { return a.Name == b.Name && a.At.Equal(b.At) && a.Fired == b.Fired }) &&
		equalPtr(s.Paused, o.Paused, func(a, b Pause) bool { return a.By == b.By && a.Reason == b.Reason && a.At.Equal(b.At) }) &&
		slices.EqualFunc(s.Commands, o.Commands, func(a, b Command) bool {
			return a.ID == b.ID && a.Verb == b.Verb && a.Step == b.Step && a.Phase == b.Phase && a.Request == b.Request &&
				a.By == b.By && a.Reason == b.Reason && a.At.Equal(b.At)
		})
}

func (o Operation[P]) equal(x Operation[P]) bool {
	return o.ID == x.ID && o.Phase == x.Phase && o.From == x.From && slices.Equal(o.Done, x.Done) &&
		o.Attempts == x.Attempts && o.LastError == x.LastError && o.ErrorClass == x.ErrorClass &&
		o.RetryAt.Equal(x.RetryAt) && o.Trigger == x.Trigger && o.Request == x.Request && slices.Equal(o.Tokens, x.Tokens)
}

func equalPtr[T any](a, b *T, eq func(T, T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return eq(*a, *b)
}

// clone returns a deep copy of s, so folds never share slices with their input.
func (s Status[S, P]) clone() Status[S, P] {
	out := s
	out.Requests = cloneRequests(s.Requests)
	out.Timers = slices.Clone(s.Timers)
	out.Conditions = slices.Clone(s.Conditions)
	if s.Operation != nil {
		op := s.Operation.clone()
		out.Operation = &op
	}
	if s.Failure != nil {
		f := *s.Failure
		f.Operation = f.Operation.clone()
		out.Failure = &f
	}
	if s.Refused != nil {
		r := *s.Refused
		out.Refused = &r
	}
	if s.Paused != nil {
		h := *s.Paused
		out.Paused = &h
	}
	out.Commands = slices.Clone(s.Commands)
	return out
}

// cloneRequests returns a copy of rs that shares no slice with it.
func cloneRequests(rs []RequestState) []RequestState {
	rs = slices.Clone(rs)
	for i := range rs {
		rs[i].Tokens = slices.Clone(rs[i].Tokens)
		rs[i].Served = slices.Clone(rs[i].Served)
	}
	return rs
}

func (o Operation[P]) clone() Operation[P] {
	o.Done = slices.Clone(o.Done)
	o.Tokens = slices.Clone(o.Tokens)
	return o
}

// Request returns a copy of s with the tokens the spec carries for request
// name, oldest first, sharing with s everything but its requests. Served
// tokens the spec no longer carries are forgotten, so the record stays as
// small as the spec; a token must therefore never be reused. A controller
// calls it before each decision.
func (s Status[S, P]) Request(name string, tokens ...string) Status[S, P] {
	i := slices.IndexFunc(s.Requests, func(r RequestState) bool { return r.Name == name })
	if i < 0 && len(tokens) == 0 {
		return s
	}
	out := s // only the requests change: they are copied, the rest is shared
	out.Requests = cloneRequests(s.Requests)
	if i < 0 {
		out.Requests = append(out.Requests, RequestState{Name: name})
		slices.SortFunc(out.Requests, func(a, b RequestState) int { return strings.Compare(a.Name, b.Name) })
		i = slices.IndexFunc(out.Requests, func(r RequestState) bool { return r.Name == name })
	}
	r := &out.Requests[i]
	r.Tokens = slices.Clone(tokens)
	r.Served = slices.DeleteFunc(r.Served, func(t string) bool { return !slices.Contains(tokens, t) })
	if len(r.Tokens) == 0 {
		out.Requests = slices.Delete(out.Requests, i, i+1)
	}
	return out
}

// Due returns a copy of s with timer name due at at (zero: not due at all),
// sharing with s everything but its timers.
// A controller calls it before each decision for the timers whose due time
// it computes from the object. A timer fires once per due time: a new time
// arms it again.
func (s Status[S, P]) Due(name string, at time.Time) Status[S, P] {
	i := slices.IndexFunc(s.Timers, func(t TimerDue) bool { return t.Name == name })
	if i >= 0 && s.Timers[i].At.Equal(at) || i < 0 && at.IsZero() {
		return s
	}
	out := s // only the timers change: they are copied, the rest is shared
	out.Timers = slices.Clone(s.Timers)
	switch {
	case at.IsZero():
		out.Timers = slices.Delete(out.Timers, i, i+1)
	case i >= 0:
		out.Timers[i] = TimerDue{Name: name, At: at}
	default:
		out.Timers = append(out.Timers, TimerDue{Name: name, At: at})
		slices.SortFunc(out.Timers, func(a, b TimerDue) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}
