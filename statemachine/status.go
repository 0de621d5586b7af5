package statemachine

import (
	"slices"
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
	// Passed lists the transitional phases completed since Target was adopted,
	// in order, without repeats. [Settle.After] is checked against it.
	Passed []P `json:"passed,omitempty"`
	// Operation is the operation in flight (nil when the phase is not
	// transitional). There is at most one per object.
	Operation *Operation[P] `json:"operation,omitempty"`
	// Conditions are the observed facts completions are judged from.
	Conditions []Condition `json:"conditions,omitempty"`
	// Failure records the terminal failure that moved the object into the
	// Fault phase. It is cleared when the next operation begins.
	Failure *Failure[P] `json:"failure,omitempty"`
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
}

// Failure records a terminal failure, for an operator.
type Failure[P comparable] struct {
	// Operation is the operation that failed, as it was when it failed.
	Operation Operation[P] `json:"operation"`
	// Step is the step that failed.
	Step string `json:"step"`
	// Reason is the failure's message.
	Reason string `json:"reason"`
}

// Condition is a named, observed fact (volume_ready, container_ready…).
type Condition struct {
	Name   string `json:"name"`
	Status bool   `json:"status"`
	// Reason is a short explanation from the observer.
	Reason string `json:"reason,omitempty"`
	// LastTransition is when Status last changed (or was first observed). The
	// time comes from the caller: the machine never reads a clock.
	LastTransition time.Time `json:"lastTransition"`
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

// Observe returns a copy of s with the observations recorded. A condition's
// LastTransition is set to now when it is new or its Status changed; otherwise
// only its Reason is updated. Conditions stay sorted by name.
func (s Status[S, P]) Observe(now time.Time, obs ...Observation) Status[S, P] {
	out := s.clone()
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
			continue
		}
		c := &out.Conditions[i]
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
		slices.Equal(s.Passed, o.Passed) &&
		equalPtr(s.Operation, o.Operation, Operation[P].equal) &&
		slices.EqualFunc(s.Conditions, o.Conditions, func(a, b Condition) bool {
			return a.Name == b.Name && a.Status == b.Status && a.Reason == b.Reason && a.LastTransition.Equal(b.LastTransition)
		}) &&
		equalPtr(s.Failure, o.Failure, func(a, b Failure[P]) bool {
			return a.Step == b.Step && a.Reason == b.Reason && a.Operation.equal(b.Operation)
		})
}

func (o Operation[P]) equal(x Operation[P]) bool {
	return o.ID == x.ID && o.Phase == x.Phase && o.From == x.From && slices.Equal(o.Done, x.Done) &&
		o.Attempts == x.Attempts && o.LastError == x.LastError
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
	out.Passed = slices.Clone(s.Passed)
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
	return out
}

func (o Operation[P]) clone() Operation[P] {
	o.Done = slices.Clone(o.Done)
	return o
}
