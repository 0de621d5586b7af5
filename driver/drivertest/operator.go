package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// operatorName is who the harness's operator actions are recorded by.
const operatorName = "drivertest"

// operate performs an operator's action a (doPause, doResume,
// doOperatorRequest, doRetry, doSkip, doMove) as an on-call client does:
// one write of the document's status, conditional on the revision read,
// tried again after a conflict with the controller's writes. A command is
// written only where the oncall package's client writes it: a retry when
// a step is failing or the document is in Fault, a skip of the step that
// failed, a move from Fault to a phase that is neither transitional nor
// Fault (which the machine may still refuse).
//
// An operation held while virtual time passed may outlast its deadline:
// its Fault is then explained. operate reports whether it wrote.
func (r *run[Spec, Status, S, P]) operate(a action[S]) bool {
	var verb statemachine.Verb
	written := r.editStatus(func(ms *statemachine.Status[S, P]) bool {
		switch a.kind {
		case doPause:
			if ms.Paused != nil {
				return false
			}
			ms.Paused = &statemachine.Pause{By: operatorName, Reason: "a random run's operator", At: time.Now()}
			r.mu.Lock()
			r.pausedAt, r.pausedOp = time.Now(), ""
			if ms.Operation != nil {
				r.pausedOp = ms.Operation.ID
			}
			r.mu.Unlock()
			return true
		case doResume:
			if ms.Paused == nil {
				return false
			}
			ms.Paused = nil
			r.mu.Lock()
			if time.Now().After(r.pausedAt) {
				if r.pausedOp != "" {
					r.op(r.pausedOp).cut = true
				}
				if ms.Operation != nil {
					r.op(ms.Operation.ID).cut = true
				}
			}
			r.mu.Unlock()
			return true
		}
		cmd := statemachine.Command{Verb: statemachine.VerbRequest, Request: a.name}
		if a.kind != doOperatorRequest {
			var why string
			if cmd, why = r.command(a, ms); why != "" {
				// The operator is paged, and answers once a step fails
				// or the document is held in Fault.
				r.logf("  not written yet: %s", why)
				r.mu.Lock()
				r.armed = append(r.armed, a)
				r.mu.Unlock()
				return false
			}
		}
		r.mu.Lock()
		r.tokens++
		cmd.ID, cmd.By, cmd.At = fmt.Sprintf("cmd-%d", r.tokens), operatorName, time.Now()
		r.mu.Unlock()
		ms.Commands, verb = append(ms.Commands, cmd), cmd.Verb
		return true
	})
	if written && verb != "" {
		r.seen.issue(verb)
	}
	return written
}

// answer writes the first operator command waiting to be written that the
// oncall package's client would write on obj, the document a replica just
// wrote: an operator answers a failed step or a Fault as the driver
// records it, before the driver goes on.
func (r *run[Spec, Status, S, P]) answer(obj *store.Object[Spec, Status]) {
	ms := status[Spec, Status, S, P](obj)
	r.mu.Lock()
	i := slices.IndexFunc(r.armed, func(a action[S]) bool {
		_, why := r.command(a, ms)
		return why == ""
	})
	if i < 0 {
		r.mu.Unlock()
		return
	}
	a := r.armed[i]
	r.armed = slices.Delete(r.armed, i, i+1)
	r.mu.Unlock()
	r.logf("  the operator answers: %v", a)
	if r.operate(a) {
		r.settleAgain()
	}
}

// command returns the command a (doRetry, doSkip, doMove) writes into ms,
// or why the oncall package's client would write none.
func (r *run[Spec, Status, S, P]) command(a action[S], ms *statemachine.Status[S, P]) (statemachine.Command, string) {
	m := r.cfg.Machine
	phase := ms.Phase
	if phase == *new(P) {
		phase = m.Initial()
	}
	ps, _ := m.Spec(phase)
	inFault := ps.Type == statemachine.Fault
	step, failed := failedStep(m, ms, inFault)
	switch {
	case a.kind == doRetry && !failed && !inFault:
		return statemachine.Command{}, "nothing to retry: no step is failing and the document is not in Fault"
	case a.kind == doRetry:
		return statemachine.Command{Verb: statemachine.VerbRetry}, ""
	case a.kind == doSkip && !failed:
		return statemachine.Command{}, "no step has failed"
	case a.kind == doSkip:
		return statemachine.Command{Verb: statemachine.VerbSkip, Step: step}, ""
	case !inFault:
		return statemachine.Command{}, fmt.Sprintf("the document is in %v, not in Fault", phase)
	}
	return statemachine.Command{Verb: statemachine.VerbMove, Phase: a.name}, ""
}

// failedStep returns the step that failed last, as the oncall package
// finds it: in the Fault phase, the step of the failure; in an operation,
// the step it is at when that step has failed attempts.
func failedStep[S, P comparable](m *statemachine.Machine[S, P], ms *statemachine.Status[S, P], inFault bool) (string, bool) {
	if inFault {
		if ms.Failure == nil || ms.Failure.Step == "" {
			return "", false
		}
		return ms.Failure.Step, true
	}
	op := ms.Operation
	if op == nil || op.Attempts == 0 {
		return "", false
	}
	ps, _ := m.Spec(op.Phase)
	i := slices.IndexFunc(ps.Steps, func(s string) bool { return !slices.Contains(op.Done, s) })
	if i < 0 {
		return "", false
	}
	return ps.Steps[i], true
}

// moveTargets returns the phases an operator may ask a move to, as the
// oncall package's client allows them: every phase of m that is neither
// transitional nor Fault (the machine refuses some of them for some
// intents). None when m has no Fault phase to move from.
func moveTargets[S, P comparable](m *statemachine.Machine[S, P]) []string {
	var out []string
	fault := false
	for _, ps := range m.Definition().Phases {
		switch ps.Type {
		case statemachine.Fault:
			fault = true
		case statemachine.Transitional:
		default:
			out = append(out, fmt.Sprint(ps.Phase))
		}
	}
	if !fault {
		return nil
	}
	return out
}

// resume lifts an operator's hold, if the document has one.
func (r *run[Spec, Status, S, P]) resume() { r.operate(action[S]{kind: doResume}) }

// editStatus applies edit to the machine's part of the document's status
// and writes it, reading the document again after a conflict, and reports
// whether it wrote it. An edit that returns false writes nothing.
func (r *run[Spec, Status, S, P]) editStatus(edit func(*statemachine.Status[S, P]) bool) bool {
	for {
		obj, err := r.coll.Get(r.ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.logf("  the document is gone")
			return false
		case err != nil:
			r.problem("reading the document: %v", err)
			return false
		}
		if !edit(status[Spec, Status, S, P](obj)) {
			return false
		}
		_, err = r.coll.UpdateStatus(r.ctx, obj)
		if !errors.Is(err, store.ErrConflict) {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				r.problem("writing the document's status as an operator: %v", err)
			}
			return err == nil
		}
	}
}
