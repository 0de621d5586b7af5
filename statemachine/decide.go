package statemachine

import (
	"fmt"
	"slices"
	"time"
)

// Action is what a [Decision] asks of the controller.
type Action int

const (
	// Nothing: the pair is settled; the intent is reached. Apply may still
	// adopt the intent as the status's Target, and record a request that is
	// moot or refused here (Decision.Request). Decision.Until, when set, is
	// the next timer due.
	Nothing Action = iota
	// Begin: begin transitional phase Decision.Next, for the intent, or, in a
	// settled pair, to repair drift (Decision.Drift), serve a request
	// (Decision.Request) or because a timer is due (Decision.Timer). The
	// controller generates an operation id and passes it in
	// [Report.OperationID]; [Machine.Apply] records it, and the status must be
	// persisted before any step runs.
	Begin
	// Run: run step Decision.Step of the in-flight operation, then fold its
	// outcome with [Machine.Apply].
	Run
	// Complete: every step is done and the completion requirements hold; Apply
	// moves to Decision.Next in the same write as the observed conditions.
	Complete
	// Wait: every step is done but the requirements in Decision.Pending do not
	// hold yet; observe again later.
	Wait
	// Hold: the object is in the Fault phase and its intent has no rule there;
	// it waits for an oncall. Decision.Reason says why it failed.
	Hold
	// Backoff: step Decision.Step failed last and may not run again before
	// Decision.Until (the retry time kept in status); come back then.
	Backoff
	// Abort: the intent changed and the machine declares that it aborts the
	// running operation: Apply moves to Decision.Next (beginning it, with
	// Report.OperationID, when it is transitional).
	Abort
	// Expire: the operation ran past its deadline; Apply moves to
	// Decision.Next, its FailTo phase, and records a [Failure] with
	// Decision.Reason.
	Expire
)

// String returns the kind's name.
func (k Action) String() string {
	switch k {
	case Nothing:
		return "nothing"
	case Begin:
		return "begin"
	case Run:
		return "run"
	case Complete:
		return "complete"
	case Wait:
		return "wait"
	case Hold:
		return "hold"
	case Backoff:
		return "backoff"
	case Abort:
		return "abort"
	case Expire:
		return "expire"
	}
	return fmt.Sprintf("Action(%d)", int(k))
}

// Decision is what [Machine.Decide] returns: the next thing to do.
type Decision[S, P comparable] struct {
	Action Action
	// Intent is the intent decided for: the requested intent, or the status's
	// Target when the requested intent is refused.
	Intent S
	// Phase is the phase the decision was made in.
	Phase P
	// Next is the phase to begin (Begin), to complete into (Complete), to
	// abort to (Abort) or to fail to (Expire).
	Next P
	// Step is the step to run (Run).
	Step string
	// Operation is the in-flight operation (Run, Complete, Wait): its ID is the
	// one to use for the step's action.
	Operation Operation[P]
	// Pending lists the completion requirements not yet met (Wait).
	Pending []Require
	// Final is set with Nothing when the settled pair is declared final: the
	// document may be removed.
	Final bool
	// Reason is the recorded failure reason (Hold), or why the operation
	// expired (Expire).
	Reason string
	// Until is when the failed step may run again (Backoff), or when the
	// next timer of a settled pair is due (Nothing).
	Until time.Time
	// Drift lists the health requirements that stopped holding (Begin of a
	// repair).
	Drift []Require
	// Request names the request being served (Begin), or recorded as moot
	// or refused (Nothing), and Tokens its tokens.
	Request string
	Tokens  []string
	// RequestRefused is the reason a request is refused (Nothing).
	RequestRefused string
	// Timer names the timer that is due (Begin).
	Timer string
	// Deadline is when the running operation expires (Run, Wait, Backoff);
	// zero when its phase is unbounded. A controller that waits comes back
	// no later than this.
	Deadline time.Time
	// Refused is non-nil when the requested intent was refused (it matches
	// [ErrIntentRefused] and names the phase and the reason). The decision
	// then serves the status's Target; Apply records the refusal in
	// Status.Refused.
	Refused *RefusalError[S, P]
}

// NeedsOperationID reports whether applying d may begin an operation, so
// that the caller must pass a new operation id in [Report.OperationID]:
// Begin, Abort or Expire into a transitional phase, and Run in a phase whose
// FailTo phase is transitional.
func (m *Machine[S, P]) NeedsOperationID(d Decision[S, P]) bool {
	target := d.Next
	switch d.Action {
	case Begin, Abort, Expire:
	case Run:
		pi, ok := m.phaseIx[d.Phase]
		if !ok || m.failTo[pi] < 0 {
			return false
		}
		target = m.phases[m.failTo[pi]].Phase
	default:
		return false
	}
	i, ok := m.phaseIx[target]
	return ok && m.phases[i].Type == Transitional
}

// Outcome is the result of running one step.
type Outcome int

const (
	// Done: the step has no work left; the checkpoint moves past it. Zero is
	// not an outcome, so a forgotten Outcome is reported, not taken for Done.
	Done Outcome = iota + 1
	// Progressed: the step did some work and must run again (the "delete the
	// triggers, return, re-run" pattern); the checkpoint stays.
	Progressed
	// Failed: a transient failure; the step is retried, Attempts grows.
	Failed
	// FailedTerminal: a terminal failure; the object moves to the Fault
	// phase with the reason, for an oncall.
	FailedTerminal
	// Pending: the step's work runs elsewhere and has not ended (a job it
	// started, a long operation of a cloud API); the step runs again to
	// look. Unlike Progressed it is no progress: the failure count and the
	// last error stay, so a job that keeps failing backs off as a step that
	// keeps failing does.
	Pending
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Done:
		return "done"
	case Progressed:
		return "progressed"
	case Failed:
		return "failed"
	case FailedTerminal:
		return "failed-terminal"
	case Pending:
		return "pending"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Report is what a controller reports back about a decision it acted on:
// the new operation's id, the step's outcome, the time. [Machine.Apply] folds
// it into the status.
type Report struct {
	// OperationID is the new operation's id, when the decision may begin one
	// (see [Machine.NeedsOperationID]). It is generated by the caller (a
	// random id in production, a counter in tests).
	OperationID string
	// Outcome is the step's outcome (Run only).
	Outcome Outcome
	// Err is the step's error (Failed, FailedTerminal); its message is recorded.
	Err error
	// Now is when the decision was acted on: an operation's Started, a
	// failure's time. The machine never reads a clock.
	Now time.Time
	// RetryAfter is how long a failed step waits before its next attempt
	// (Failed, FailedTerminal): the caller's backoff for the operation's
	// failure count. Status.Operation.RetryAt becomes Now + RetryAfter.
	RetryAfter time.Duration
	// ErrorClass names the class of Err (see [Machine.Classify]), recorded
	// as Operation.ErrorClass (Failed, FailedTerminal).
	ErrorClass string
}

// Decide returns what to do next for an object whose user intent is intent and
// whose status is st, at time now. It is pure: no I/O, no clock (now is
// data), no randomness.
//
// In a transitional phase Decide begins the operation if none is recorded;
// aborts it when the intent changed and the machine declares an [Abort]
// for it (also before the operation began: an intent that aborts the
// initial phase's operation of a document never decided on aborts it before
// its first step); expires it when its deadline has passed; otherwise returns the
// first step not yet done (Backoff instead of Run while the step's retry
// time has not come), and once all are done Complete or Wait from the
// observed conditions (completion wins over an expired deadline). In any
// other phase it returns Nothing for a settled pair, Begin for a ruled one
// and Hold in the Fault phase.
//
// An intent the machine declares refused in st.Phase (see [RefusalRule]) is not
// acted on: the decision serves st.Target and Decision.Refused reports the
// refusal. Decide returns an error only when it cannot decide: an unknown
// state or phase, a pair declared unreachable, or a refused intent whose
// Target is refused too.
func (m *Machine[S, P]) Decide(intent S, st Status[S, P], now time.Time) (Decision[S, P], error) {
	_, pi, err := m.indices(intent, st.Phase)
	if err != nil {
		return Decision[S, P]{}, err
	}
	d := Decision[S, P]{Intent: intent, Phase: st.Phase}
	if reason, ok := m.refused[Pair[S, P]{intent, st.Phase}]; ok {
		d.Refused = &RefusalError[S, P]{Machine: m.name, Intent: intent, Phase: st.Phase, Reason: reason}
		if _, known := m.stateIx[st.Target]; !known || hasKey(m.refused, Pair[S, P]{st.Target, st.Phase}) {
			return Decision[S, P]{}, d.Refused
		}
		d.Intent = st.Target
	}
	ps := m.phases[pi]
	if ps.Type == Transitional {
		op := st.Operation
		if to, ok := m.aborts[Pair[S, P]{d.Intent, ps.Phase}]; ok && op == nil {
			// No operation began (a document whose status was never
			// written, in a transitional initial phase): the intent that
			// aborts the phase's operation aborts it before its first step.
			d.Action, d.Next = Abort, to
			return d, nil
		}
		if op == nil || op.Phase != ps.Phase {
			d.Action, d.Next = Begin, ps.Phase
			return d, nil
		}
		d.Operation = op.clone()
		if to, ok := m.aborts[Pair[S, P]{d.Intent, ps.Phase}]; ok && d.Intent != st.Target {
			d.Action, d.Next = Abort, to
			return d, nil
		}
		if dl := m.bounds[pi].Deadline; dl > 0 && !st.Since.IsZero() {
			d.Deadline = st.Since.Add(dl)
		}
		expired := !d.Deadline.IsZero() && !now.Before(d.Deadline)
		if step, ok := nextStep(ps.Steps, op.Done); ok {
			d.Step = step
			switch {
			case expired:
				d.Action, d.Next = Expire, m.phases[m.failTo[pi]].Phase
				d.Reason = fmt.Sprintf("%v did not complete within its deadline of %v: at step %s", ps.Phase, m.bounds[pi].Deadline, step)
				if op.Attempts > 0 {
					d.Reason += fmt.Sprintf(" after %d failed attempts (last: %s)", op.Attempts, op.LastError)
				}
			case op.RetryAt.After(now):
				d.Action, d.Until = Backoff, op.RetryAt
			default:
				d.Action = Run
			}
			return d, nil
		}
		for _, r := range ps.Completion {
			if c, ok := st.Condition(r.Condition); !ok || c.Status != r.Status {
				d.Pending = append(d.Pending, r)
			}
		}
		switch {
		case len(d.Pending) == 0:
			d.Action, d.Next = Complete, ps.Then
		case expired:
			d.Action, d.Next = Expire, m.phases[m.failTo[pi]].Phase
			d.Reason = fmt.Sprintf("%v did not complete within its deadline of %v: still waiting for %s", ps.Phase, m.bounds[pi].Deadline, join(d.Pending, ", "))
		default:
			d.Action = Wait
		}
		return d, nil
	}
	pair := Pair[S, P]{d.Intent, ps.Phase}
	if set, ok := m.settled[pair]; ok {
		d.Action, d.Final = Nothing, set.Final
		if !set.Final {
			m.settledMoves(&d, pi, st, now)
		}
		return d, nil
	}
	if r, ok := m.rules[pair]; ok {
		d.Action, d.Next = Begin, r.Begin
		m.ride(&d, st)
		return d, nil
	}
	if m.unreach[pair] {
		return Decision[S, P]{}, &PairError[S, P]{Machine: m.name, State: d.Intent, Phase: ps.Phase, Err: ErrDeclaredUnreachable, Detail: "the pair was declared unreachable"}
	}
	// Build checked every other pair: only the Fault phase is left.
	d.Action = Hold
	if st.Failure != nil {
		d.Reason = st.Failure.Reason
	}
	return d, nil
}

// settledMoves decides, for an object settled in phase pi, whether drift
// from the phase's health, a pending request or a due timer begins an
// operation, in that order; otherwise d stays Nothing, with the next timer
// due in d.Until.
func (m *Machine[S, P]) settledMoves(d *Decision[S, P], pi int, st Status[S, P], now time.Time) {
	ps := m.phases[pi]
	for _, r := range ps.Health {
		if c, ok := st.Condition(r.Condition); !ok || c.Status != r.Status {
			d.Drift = append(d.Drift, r)
		}
	}
	if len(d.Drift) > 0 {
		d.Action, d.Next = Begin, ps.Repair
		return
	}
	for _, r := range m.def.Requests {
		i := slices.IndexFunc(st.Requests, func(s RequestState) bool { return s.Name == r.Name })
		if i < 0 {
			continue
		}
		tokens := st.Requests[i].pending()
		if len(tokens) == 0 {
			continue
		}
		if r.Queue {
			tokens = tokens[:1]
		}
		if j := slices.IndexFunc(r.Serve, func(e Edge[P]) bool { return e.From == ps.Phase }); j >= 0 {
			d.Action, d.Next, d.Request, d.Tokens = Begin, r.Serve[j].To, r.Name, tokens
			return
		}
		switch {
		case slices.Contains(r.Moot, ps.Phase):
			d.Request, d.Tokens = r.Name, tokens
			return
		case slices.Contains(r.Refuse, ps.Phase):
			d.Request, d.Tokens, d.RequestRefused = r.Name, tokens, r.Reason
			return
		}
	}
	for _, t := range m.def.Timers {
		if t.Phase != ps.Phase {
			continue
		}
		due := st.Since.Add(t.After)
		if t.After == 0 || st.Since.IsZero() {
			due = time.Time{}
			if i := slices.IndexFunc(st.Timers, func(d TimerDue) bool { return d.Name == t.Name }); i >= 0 && !st.Timers[i].Fired {
				due = st.Timers[i].At
			}
		}
		switch {
		case due.IsZero():
		case !now.Before(due):
			d.Action, d.Next, d.Timer, d.Until = Begin, t.Begin, t.Name, time.Time{}
			return
		case d.Until.IsZero() || due.Before(d.Until):
			d.Until = due
		}
	}
}

// ride lets the operation a rule begins serve the first pending request
// whose Serve edge it takes: restarting a stopped gateway only starts it.
func (m *Machine[S, P]) ride(d *Decision[S, P], st Status[S, P]) {
	for _, r := range m.def.Requests {
		if !slices.Contains(r.Serve, Edge[P]{From: d.Phase, To: d.Next}) {
			continue
		}
		i := slices.IndexFunc(st.Requests, func(s RequestState) bool { return s.Name == r.Name })
		if i < 0 {
			continue
		}
		if tokens := st.Requests[i].pending(); len(tokens) > 0 {
			if r.Queue {
				tokens = tokens[:1]
			}
			d.Request, d.Tokens = r.Name, tokens
			return
		}
	}
}

// trigger says what began the operation a Begin decision starts.
func (d Decision[S, P]) trigger() string {
	switch {
	case len(d.Drift) > 0:
		return "drift " + join(d.Drift, ", ")
	case d.Request != "":
		return "request " + d.Request
	case d.Timer != "":
		return "timer " + d.Timer
	case d.Action == Abort:
		return fmt.Sprintf("abort for intent %v", d.Intent)
	}
	return fmt.Sprintf("intent %v", d.Intent)
}

// serve records tokens of request name as served (refused, with reason, when
// reason is set).
func (s *Status[S, P]) serve(name string, tokens []string, reason string) {
	i := slices.IndexFunc(s.Requests, func(r RequestState) bool { return r.Name == name })
	if i < 0 {
		return // the spec withdrew the request meanwhile
	}
	r := &s.Requests[i]
	for _, t := range tokens {
		if slices.Contains(r.Tokens, t) && !slices.Contains(r.Served, t) {
			r.Served = append(r.Served, t)
		}
	}
	r.Refused = reason
}

// nextStep returns the first step not in done.
func nextStep(steps, done []string) (string, bool) {
	for _, s := range steps {
		if !slices.Contains(done, s) {
			return s, true
		}
	}
	return "", false
}

// Apply folds a decision and its result into a new status, which the caller
// persists in one write. It never modifies st; like any copy of a Status
// value, the status returned shares with st the slices and pointers the
// decision leaves alone. Every decision records the refusal it reports
// (Status.Refused) or clears it.
//
//   - Nothing: adopts d.Intent as Target; records d.Request's tokens as
//     served when the request is moot or refused in the phase.
//   - Begin: adopts d.Intent and moves to d.Next. Beginning the phase of the
//     operation that failed last (a rule out of the Fault phase) resumes it:
//     same id, checkpoint, failure count and retry time, a new deadline.
//     Otherwise a new operation is recorded with r.OperationID and an empty
//     checkpoint, and Failure is cleared.
//   - Run: Done adds the step to the checkpoint; Progressed keeps it; both
//     reset Attempts, LastError and RetryAt. Pending changes nothing.
//     Failed increments Attempts,
//     records the error and its class and sets RetryAt to r.Now + r.RetryAfter; the attempt
//     that reaches the phase's MaxAttempts moves to its FailTo phase with a
//     [Failure]. FailedTerminal does the same at once.
//   - Complete: moves to d.Next and clears the operation; the tokens of the
//     request it served count as served.
//   - Abort: adopts d.Intent and moves to d.Next, beginning it as Begin does.
//   - Expire: moves to d.Next with a [Failure] of cause [CauseDeadline].
//   - Wait, Hold, Backoff: no change.
//
// It returns an error matching [ErrStaleDecision] when d was not decided on st
// (another phase, another operation, a step that is not next), [ErrMissingID],
// [ErrNoFaultPhase], or [ErrInvalid] for a Run without an outcome.
func (m *Machine[S, P]) Apply(st Status[S, P], d Decision[S, P], r Report) (Status[S, P], error) {
	if d.Phase != st.Phase {
		return st, fmt.Errorf("%w: decided in phase %v, status is in %v", ErrStaleDecision, d.Phase, st.Phase)
	}
	pi, ok := m.phaseIx[st.Phase]
	if !ok {
		return st, &PhaseError[P]{Machine: m.name, Phase: st.Phase, Err: ErrUnknownPhase, Detail: "status phase is not a phase of the machine"}
	}
	// out shares with st what this decision leaves alone; what it changes
	// in place (the running operation, the requests it serves, the timer
	// it fires) is copied first.
	out := st
	out.Refused = nil
	if d.Refused != nil {
		out.Refused = &Refusal[S]{Intent: d.Refused.Intent, Reason: d.Refused.Reason}
	}
	switch d.Action {
	case Nothing:
		out.Target = d.Intent
		if d.Request != "" {
			out.Requests = cloneRequests(out.Requests)
			out.serve(d.Request, d.Tokens, d.RequestRefused)
		}
	case Begin, Abort:
		if d.Action == Abort && (out.Operation == nil) != (d.Operation.ID == "") ||
			d.Action == Abort && out.Operation != nil && out.Operation.ID != d.Operation.ID {
			return st, fmt.Errorf("%w: aborting another operation", ErrStaleDecision)
		}
		out.Target = d.Intent
		if err := m.enter(&out, st, d.Next, r); err != nil {
			return st, err
		}
		if op := out.Operation; op != nil && op.ID == r.OperationID {
			op.Trigger = d.trigger()
			op.Request, op.Tokens = d.Request, slices.Clone(d.Tokens)
		}
		if i := slices.IndexFunc(out.Timers, func(t TimerDue) bool { return t.Name == d.Timer }); d.Timer != "" && i >= 0 {
			out.Timers = slices.Clone(out.Timers)
			out.Timers[i].Fired = true
		}
	case Run:
		if out.Operation == nil || out.Operation.ID != d.Operation.ID {
			return st, fmt.Errorf("%w: step %q of another operation", ErrStaleDecision, d.Step)
		}
		cp := out.Operation.clone()
		op := &cp
		out.Operation = op
		if next, ok := nextStep(m.phases[pi].Steps, op.Done); !ok || next != d.Step {
			return st, fmt.Errorf("%w: step %q is not the next step", ErrStaleDecision, d.Step)
		}
		switch r.Outcome {
		case Done:
			op.Done = append(op.Done, d.Step)
			op.Attempts, op.LastError, op.ErrorClass, op.RetryAt = 0, "", "", time.Time{}
		case Progressed:
			op.Attempts, op.LastError, op.ErrorClass, op.RetryAt = 0, "", "", time.Time{}
		case Pending:
		case Failed, FailedTerminal:
			op.Attempts++
			op.LastError, op.ErrorClass = errText(r.Err), r.ErrorClass
			op.RetryAt = r.Now.Add(r.RetryAfter)
			var err error
			switch max := m.bounds[pi].MaxAttempts; {
			case r.Outcome == FailedTerminal:
				out, err = m.fail(out, d.Step, CauseTerminal, op.LastError, r)
			case max > 0 && op.Attempts >= max:
				out, err = m.fail(out, d.Step, CauseAttempts,
					fmt.Sprintf("step %s failed %d times in a row (last: %s)", d.Step, op.Attempts, op.LastError), r)
			}
			if err != nil {
				return st, err
			}
		default:
			return st, fmt.Errorf("%w: step %q applied with outcome %v", ErrInvalid, d.Step, r.Outcome)
		}
	case Complete:
		if out.Operation == nil || out.Operation.ID != d.Operation.ID {
			return st, fmt.Errorf("%w: completing another operation", ErrStaleDecision)
		}
		if op := out.Operation; op.Request != "" {
			out.Requests = cloneRequests(out.Requests)
			out.serve(op.Request, op.Tokens, "")
		}
		out.Phase = d.Next
		out.Operation = nil
	case Expire:
		if out.Operation == nil || out.Operation.ID != d.Operation.ID {
			return st, fmt.Errorf("%w: expiring another operation", ErrStaleDecision)
		}
		out, err := m.fail(out, d.Step, CauseDeadline, d.Reason, r)
		return out.entered(st, r.Now), err
	case Wait, Hold, Backoff:
	default:
		return st, fmt.Errorf("%w: decision kind %v", ErrInvalid, d.Action)
	}
	return out.entered(st, r.Now), nil
}

// entered stamps Since when s moved out of prev's phase.
func (s Status[S, P]) entered(prev Status[S, P], now time.Time) Status[S, P] {
	if s.Phase != prev.Phase {
		s.Since = now
	}
	return s
}

// enter moves out, decided on st, into phase next, beginning (or resuming)
// its operation when next is transitional.
func (m *Machine[S, P]) enter(out *Status[S, P], st Status[S, P], next P, r Report) error {
	ni, ok := m.phaseIx[next]
	if !ok {
		return &PhaseError[P]{Machine: m.name, Phase: next, Err: ErrUnknownPhase, Detail: "decision names an undeclared phase"}
	}
	out.Phase, out.Operation = next, nil
	if m.phases[ni].Type != Transitional {
		return nil
	}
	if f := st.Failure; f != nil && f.Operation.Phase == next {
		op := f.Operation.clone()
		op.From = st.Phase
		out.Operation, out.Failure = &op, nil
		return nil
	}
	if r.OperationID == "" {
		return fmt.Errorf("%w: beginning %v", ErrMissingID, next)
	}
	out.Operation = &Operation[P]{ID: r.OperationID, Phase: next, From: st.Phase}
	out.Failure = nil
	return nil
}

// fail gives up out's operation, recording why, and moves to the phase's
// FailTo phase (beginning it when it is transitional; the failure is kept).
func (m *Machine[S, P]) fail(out Status[S, P], step string, cause Cause, reason string, r Report) (Status[S, P], error) {
	pi := m.phaseIx[out.Phase]
	target := m.failTo[pi]
	if target < 0 {
		return out, fmt.Errorf("%w: %v gave up (%s): %s", ErrNoFaultPhase, out.Phase, cause, reason)
	}
	from := out.Phase
	out.Failure = &Failure[P]{Operation: *out.Operation, Step: step, Cause: cause, Reason: reason, At: r.Now}
	out.Phase, out.Operation = m.phases[target].Phase, nil
	if m.phases[target].Type == Transitional {
		if r.OperationID == "" {
			return out, fmt.Errorf("%w: failing to %v", ErrMissingID, out.Phase)
		}
		out.Operation = &Operation[P]{ID: r.OperationID, Phase: out.Phase, From: from}
	}
	return out, nil
}

func errText(err error) string {
	if err == nil {
		return "failed"
	}
	return err.Error()
}
