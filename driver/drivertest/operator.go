package drivertest

import (
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// operatorName is who the harness's operator actions are recorded by.
const operatorName = "drivertest"

// operate performs an operator's action a (doPause, doResume,
// doOperatorRequest) as an on-call client does: one write of the
// document's status, conditional on the revision read, tried again after
// a conflict with the controller's writes.
//
// An operation held while virtual time passed may outlast its deadline:
// its Fault is then explained.
func (r *run[Spec, Status, S, P]) operate(a action[S]) {
	r.editStatus(func(ms *statemachine.Status[S, P]) bool {
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
		case doOperatorRequest:
			r.mu.Lock()
			r.tokens++
			id := fmt.Sprintf("cmd-%d", r.tokens)
			r.mu.Unlock()
			ms.Commands = append(ms.Commands, statemachine.Command{ID: id, Verb: statemachine.VerbRequest,
				Request: a.name, By: operatorName, At: time.Now()})
		}
		return true
	})
}

// resume lifts an operator's hold, if the document has one.
func (r *run[Spec, Status, S, P]) resume() { r.operate(action[S]{kind: doResume}) }

// editStatus applies edit to the machine's part of the document's status
// and writes it, reading the document again after a conflict. An edit that
// returns false writes nothing.
func (r *run[Spec, Status, S, P]) editStatus(edit func(*statemachine.Status[S, P]) bool) {
	for {
		obj, err := r.coll.Get(r.ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.logf("  the document is gone")
			return
		case err != nil:
			r.problem("reading the document: %v", err)
			return
		}
		if !edit(status[Spec, Status, S, P](obj)) {
			return
		}
		_, err = r.coll.UpdateStatus(r.ctx, obj)
		if !errors.Is(err, store.ErrConflict) {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				r.problem("writing the document's status as an operator: %v", err)
			}
			return
		}
	}
}
