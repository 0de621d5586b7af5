package statemachine

import (
	"fmt"
	"slices"
	"time"
)

// CommandOutcome is what became of one operator [Command] carried out by
// [Machine.ApplyCommands]: applied, or refused with the reason.
type CommandOutcome struct {
	// Command is the command, as the operator wrote it.
	Command Command
	// Applied reports whether the command was carried out. A command that
	// was not is refused, and Reason says why.
	Applied bool
	Reason  string
	// Phase is the phase the object was in when the command was carried out
	// or refused, and To the phase it left the object in (empty when it did
	// not move it), both as their String form.
	Phase, To string
	// Operation is the id of the operation the command acted on, and Step
	// the step it retried or skipped, when it did.
	Operation, Step string
}

// ApplyCommands returns a copy of st with its operator commands
// (Status.Commands) carried out in order, each on the status the one before
// it left, and what became of each. Each command it carries out or refuses
// is removed from the returned status, so a controller stores both in one
// write; a controller calls it on the status it read, before it decides,
// and again after each [Machine.Apply]. intent is the intent the controller
// serves for the object (the final state for an object being deleted) and
// now the time, as for [Machine.Decide].
//
// The verbs:
//
//   - [VerbRetry]. In a transitional phase whose current step has failed
//     attempts (it waits out its backoff), forget the attempts (Attempts,
//     LastError and RetryAt are cleared), so the step runs at once. In the
//     Fault phase, while the machine holds the object there (its intent
//     has no rule there) and a Failure is recorded, resume the failed
//     operation: its phase is entered again with the same id and
//     checkpoint, its attempts forgotten, a new deadline counted from now,
//     and the Failure cleared — unless both the intent and the status's
//     Target are refused in that phase (an intent changed past a point of
//     no return), where the machine could not decide. Refused otherwise:
//     nothing to retry.
//   - [VerbSkip]. Command.Step must be the step that failed: in a
//     transitional phase, the current step with failed attempts; in the
//     Fault phase, Failure.Step, under the same conditions as retry. The
//     step counts as done and the operation goes on (resumed, from Fault)
//     with the next. Refused otherwise.
//   - [VerbMove]. Only from the Fault phase, to another phase the machine
//     declares that is not transitional and where the intent is neither
//     refused nor declared unreachable. [New] proved that every such pair
//     reaches an end (see [ErrNoProgress]), so the object goes on from
//     there on its own. The Failure and the operation are cleared (a later
//     operation starts afresh rather than resuming the failed one) and
//     Since is now. Refused otherwise.
//   - [VerbRequest]. Command.Request must be a request of the machine. The
//     command's ID is a token of that request, served once as the spec's
//     tokens are (see [Status.RequestCommands]): the command stays in
//     Status.Commands until its token is recorded served, and is removed,
//     with its outcome, by the call that finds it served (applied, or
//     refused with the machine's reason when the request was refused in
//     the phase). Until then it has no outcome.
//
// A command without an ID or with an unknown verb is refused. ApplyCommands
// never modifies st.
func (m *Machine[S, P]) ApplyCommands(intent S, st Status[S, P], now time.Time) (Status[S, P], []CommandOutcome) {
	if len(st.Commands) == 0 {
		return st, nil
	}
	out := st.clone()
	out.Commands = nil
	var outcomes []CommandOutcome
	for _, c := range st.Commands {
		o := CommandOutcome{Command: c, Phase: fmt.Sprint(out.Phase)}
		from := out.Phase
		switch {
		case c.ID == "":
			o.Reason = "the command has no id"
		case c.Verb == VerbRetry:
			o.Reason = m.retry(intent, &out, now, &o)
		case c.Verb == VerbSkip:
			o.Reason = m.skip(intent, &out, now, &o)
		case c.Verb == VerbMove:
			o.Reason = m.move(intent, &out, now, c.Phase)
		case c.Verb == VerbRequest:
			keep, reason := m.requested(out, c)
			if keep {
				out.Commands = append(out.Commands, c)
				continue
			}
			o.Reason = reason
			o.Applied = reason == ""
			if i := slices.IndexFunc(out.Requests, func(r RequestState) bool { return r.Name == c.Request }); o.Applied && i >= 0 && out.Requests[i].Refused != "" {
				o.Applied, o.Reason = false, out.Requests[i].Refused
			}
			outcomes = append(outcomes, o)
			continue
		default:
			o.Reason = fmt.Sprintf("unknown verb %q", c.Verb)
		}
		o.Applied = o.Reason == ""
		if out.Phase != from {
			o.To = fmt.Sprint(out.Phase)
		}
		outcomes = append(outcomes, o)
	}
	return out, outcomes
}

// retry carries out a retry on out, recording in o what it acted on; it
// returns why it refused, or "".
func (m *Machine[S, P]) retry(intent S, out *Status[S, P], now time.Time, o *CommandOutcome) string {
	if op, step, ok := m.failing(*out); ok {
		op.Attempts, op.LastError, op.ErrorClass, op.RetryAt = 0, "", "", time.Time{}
		o.Operation, o.Step = op.ID, step
		return ""
	}
	if reason := m.resumable(intent, *out, now); reason != "" {
		return reason
	}
	id, step := out.Failure.Operation.ID, out.Failure.Step
	if reason := m.resume(intent, out, now, ""); reason != "" {
		return reason
	}
	o.Operation, o.Step = id, step
	return ""
}

// skip carries out a skip on out; it returns why it refused, or "".
func (m *Machine[S, P]) skip(intent S, out *Status[S, P], now time.Time, o *CommandOutcome) string {
	want := o.Command.Step
	if op, step, ok := m.failing(*out); ok {
		if step != want {
			return fmt.Sprintf("step %q is not the step that failed (%s)", want, step)
		}
		op.Done = append(op.Done, step)
		op.Attempts, op.LastError, op.ErrorClass, op.RetryAt = 0, "", "", time.Time{}
		o.Operation, o.Step = op.ID, step
		return ""
	}
	if reason := m.resumable(intent, *out, now); reason != "" {
		return reason
	}
	switch f := out.Failure; {
	case f.Step == "":
		return fmt.Sprintf("the operation failed waiting for its completion, at no step: %s", f.Reason)
	case f.Step != want:
		return fmt.Sprintf("step %q is not the step that failed (%s)", want, f.Step)
	}
	id := out.Failure.Operation.ID
	if reason := m.resume(intent, out, now, want); reason != "" {
		return reason
	}
	o.Operation, o.Step = id, want
	return ""
}

// failing returns the operation of out and its current step when out is in
// a transitional phase whose current step has failed attempts.
func (m *Machine[S, P]) failing(out Status[S, P]) (*Operation[P], string, bool) {
	pi, ok := m.phaseIx[out.Phase]
	op := out.Operation
	if !ok || m.phases[pi].Type != Transitional || op == nil || op.Phase != out.Phase || op.Attempts == 0 {
		return nil, "", false
	}
	step, ok := nextStep(m.phases[pi].Steps, op.Done)
	return op, step, ok
}

// resumable returns why the failed operation recorded in out cannot be
// resumed, or "": out must be held in the Fault phase with a Failure of a
// transitional phase.
func (m *Machine[S, P]) resumable(intent S, out Status[S, P], now time.Time) string {
	pi, ok := m.phaseIx[out.Phase]
	switch {
	case !ok || pi != m.failure:
		return fmt.Sprintf("nothing to retry in %v: no failed step, and not in the fault phase", out.Phase)
	case out.Failure == nil:
		return fmt.Sprintf("nothing to retry in %v: no failure recorded", out.Phase)
	}
	fi, ok := m.phaseIx[out.Failure.Operation.Phase]
	if !ok || m.phases[fi].Type != Transitional {
		return fmt.Sprintf("the failed operation's phase %v is not a transitional phase of the machine", out.Failure.Operation.Phase)
	}
	d, err := m.Decide(intent, out, now)
	switch {
	case err != nil:
		return err.Error()
	case d.Action != Hold:
		return fmt.Sprintf("intent %v is not held in %v: it begins %v", d.Intent, out.Phase, d.Next)
	}
	return ""
}

// resume enters again the phase of out's failed operation, resuming it
// with its attempts forgotten and, when skip is set, that step counted
// done. It returns why it refused, or "": the machine must be able to
// decide on the result, which it cannot when both the intent and the
// target are refused in the operation's phase (an intent changed since
// the operation began, past a point of no return).
func (m *Machine[S, P]) resume(intent S, out *Status[S, P], now time.Time, skip string) string {
	next := out.clone()
	op := next.Failure.Operation.clone()
	op.From = next.Phase
	op.Attempts, op.LastError, op.ErrorClass, op.RetryAt = 0, "", "", time.Time{}
	if skip != "" && !slices.Contains(op.Done, skip) {
		op.Done = append(op.Done, skip)
	}
	next.Phase, next.Operation, next.Failure, next.Since = op.Phase, &op, nil, now
	if _, err := m.Decide(intent, next, now); err != nil {
		return err.Error()
	}
	*out = next
	return ""
}

// move carries out a move to the phase named to; it returns why it
// refused, or "".
func (m *Machine[S, P]) move(intent S, out *Status[S, P], now time.Time, to string) string {
	if pi, ok := m.phaseIx[out.Phase]; !ok || pi != m.failure {
		return fmt.Sprintf("a move leaves the fault phase only; the object is in %v", out.Phase)
	}
	ti := slices.IndexFunc(m.phases, func(ps PhaseSpec[P]) bool { return fmt.Sprint(ps.Phase) == to })
	switch {
	case ti < 0:
		return fmt.Sprintf("%q is not a phase of the machine", to)
	case ti == m.failure:
		return fmt.Sprintf("the object is in %v already", out.Phase)
	case m.phases[ti].Type == Transitional:
		return fmt.Sprintf("%v is transitional: an operation is begun by the machine, not moved into", m.phases[ti].Phase)
	}
	target := m.phases[ti].Phase
	if err := m.Admit(intent, target); err != nil {
		return err.Error()
	}
	out.Phase, out.Operation, out.Failure, out.Since = target, nil, nil, now
	return ""
}

// requested reports whether the request command c stays in out's commands
// (its token is not served yet), or why it is refused ("" when it was
// served).
func (m *Machine[S, P]) requested(out Status[S, P], c Command) (keep bool, reason string) {
	if !slices.ContainsFunc(m.def.Requests, func(r RequestRule[P]) bool { return r.Name == c.Request }) {
		return false, fmt.Sprintf("%q is not a request of the machine", c.Request)
	}
	i := slices.IndexFunc(out.Requests, func(r RequestState) bool { return r.Name == c.Request })
	return i < 0 || !slices.Contains(out.Requests[i].Served, c.ID), ""
}

// RequestCommands returns the ids of the commands in s.Commands that ask
// for request name ([VerbRequest]), in order: tokens of that request beside
// the spec's. A controller passes them to [Status.Request] with the spec's
// tokens, so that they are served once and forgotten once their commands
// are removed.
func (s Status[S, P]) RequestCommands(name string) []string {
	var out []string
	for _, c := range s.Commands {
		if c.Verb == VerbRequest && c.Request == name && c.ID != "" {
			out = append(out, c.ID)
		}
	}
	return out
}
