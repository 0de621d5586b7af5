package drivertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// act performs a and then checks the world's invariant.
func (r *run[Spec, Status, S, P]) act(a action[S]) {
	r.logf("%v", a)
	switch a.kind {
	case doIntent:
		r.write(func(s *Spec) { r.cfg.SetIntent(s, a.intent) })
	case doRequest:
		r.mu.Lock()
		r.tokens++
		tok := fmt.Sprintf("%s-%d", a.name, r.tokens)
		r.mu.Unlock()
		r.write(func(s *Spec) { r.cfg.Request(s, a.name, tok) })
	case doDelete:
		switch err := r.coll.Delete(r.ctx, key, store.DeleteOptions{}); {
		case errors.Is(err, store.ErrNotFound):
			r.logf("  already removed")
		case err != nil:
			r.problem("deleting the document: %v", err)
		}
	case doRelease:
		r.release()
	case doTouch:
		r.mu.Lock()
		r.touch = true
		r.mu.Unlock()
	case doRecreate:
		r.create(a.intent, false)
	case doFail, doFailAfter, doTerminal, doPanic, doSlow, doCrashAfter: // a.stepFault()
		r.mu.Lock()
		if r.oneFault {
			r.oneShot = r.oneShot[:0]
		}
		r.oneShot = append(r.oneShot, a)
		r.mu.Unlock()
	case doBreak:
		r.mu.Lock()
		r.broken[a.name] = true
		r.mu.Unlock()
	case doFlip:
		r.mu.Lock()
		r.flips[a.name] = flipped
		r.mu.Unlock()
	case doHeal:
		r.heal()
	case doPause, doResume, doOperatorRequest, doRetry, doSkip, doMove:
		r.operate(a)
	case doCrash:
		r.crash(a.replica)
	case doPartition:
		r.markCut()
		r.mu.Lock()
		r.partitioned[a.replica] = true
		r.disruptions++
		r.mu.Unlock()
	case doStart:
		for id := range r.cfg.Replicas {
			if err := r.start(id); err != nil {
				r.problem("starting replica %d: %v", id, err)
			}
		}
	case doSleep:
		// Time passing lets step calls run freely, in a stepwise run too.
		r.mu.Lock()
		stepwise := r.gate != nil
		r.mu.Unlock()
		r.open()
		if a.d == 0 {
			synctest.Wait()
		} else {
			time.Sleep(a.d)
		}
		if stepwise {
			r.mu.Lock()
			r.gate = make(chan struct{})
			r.mu.Unlock()
		}
	}
	r.advance()
	synctest.Wait() // the next action comes once everything else waits: a run replays
	r.invariant("after: " + a.String())
}

// write changes the document's spec as the user's API does: through the
// driver's admission, which refuses an intent the machine does not accept
// in the phase read.
func (r *run[Spec, Status, S, P]) write(set func(*Spec)) {
	_, err := r.client.UpdateSpec(r.ctx, key, set)
	switch {
	case errors.Is(err, statemachine.ErrIntentRefused):
		r.logf("  refused: %v", err)
	case errors.Is(err, store.ErrNotFound):
		r.logf("  the document is gone")
	case err != nil:
		r.problem("writing the spec: %v", err)
	}
}

// create creates the document with intent, and with another owner's
// finalizer when hold is set.
func (r *run[Spec, Status, S, P]) create(intent S, hold bool) {
	obj := &store.Object[Spec, Status]{Meta: store.Meta{Key: key}}
	if r.cfg.NewSpec != nil {
		obj.Spec = r.cfg.NewSpec()
	}
	if hold {
		obj.Finalizers = []string{holdFinalizer}
	}
	r.cfg.SetIntent(&obj.Spec, intent)
	switch _, err := r.client.Create(r.ctx, obj); {
	case errors.Is(err, store.ErrAlreadyExists):
		r.logf("  the document still exists")
	case err != nil:
		r.problem("creating the document with intent %v: %v", intent, err)
	}
}

// release removes the other owner's finalizer, if the document has it.
func (r *run[Spec, Status, S, P]) release() {
	for {
		obj, err := r.coll.Get(r.ctx, key)
		if errors.Is(err, store.ErrNotFound) || err == nil && !obj.HasFinalizer(holdFinalizer) {
			return
		}
		if err != nil {
			r.problem("reading the document: %v", err)
			return
		}
		obj.Finalizers = slices.DeleteFunc(obj.Finalizers, func(f string) bool { return f == holdFinalizer })
		_, err = r.coll.UpdateSpec(r.ctx, obj)
		if !errors.Is(err, store.ErrConflict) {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				r.problem("removing the other owner's finalizer: %v", err)
			}
			return
		}
	}
}

// touchLabels writes the document's labels, as a user or another tool
// would while a step runs: the driver's status write after the step
// conflicts with it.
func (r *run[Spec, Status, S, P]) touchLabels() {
	for {
		obj, err := r.coll.Get(r.ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return
		case err != nil:
			r.problem("reading the document: %v", err)
			return
		}
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		n, _ := strconv.Atoi(obj.Labels[touchLabel])
		obj.Labels[touchLabel] = strconv.Itoa(n + 1)
		_, err = r.coll.UpdateSpec(r.ctx, obj)
		if !errors.Is(err, store.ErrConflict) {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				r.problem("writing the document's labels: %v", err)
			}
			return
		}
	}
}

// markCut records that the operation stored, if any, had a replica cut
// off the store while it ran: a deadline it reaches may be the harness's
// doing.
func (r *run[Spec, Status, S, P]) markCut() {
	obj, _ := r.get()
	if obj == nil {
		return
	}
	if op := status[Spec, Status, S, P](obj).Operation; op != nil {
		r.mu.Lock()
		r.op(op.ID).cut = true
		r.mu.Unlock()
	}
}

// heal ends every fault in force.
func (r *run[Spec, Status, S, P]) heal() {
	r.mu.Lock()
	cut := len(r.partitioned) > 0
	r.mu.Unlock()
	if cut {
		r.markCut()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.oneShot = nil
	clear(r.broken)
	r.disruptions++
	clear(r.flips)
	clear(r.partitioned)
}

// get returns the document as stored, or nil once it is removed. A status
// never written reads as the machine's initial phase, as the driver reads
// it.
func (r *run[Spec, Status, S, P]) get() (*store.Object[Spec, Status], bool) {
	obj, err := r.coll.Get(r.ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, true
	case err != nil:
		r.problem("reading the document: %v", err)
		return nil, false
	}
	if st := status[Spec, Status, S, P](obj); st.Phase == *new(P) {
		st.Phase = r.cfg.Machine.Initial()
	}
	return obj, true
}

// invariant checks the world's invariant.
func (r *run[Spec, Status, S, P]) invariant(when string) {
	if r.world.Invariant == nil {
		return
	}
	obj, ok := r.get()
	if !ok {
		return
	}
	if err := r.world.Invariant(r.ctx, key, obj); err != nil {
		r.worldProblem("%s: invariant broken: %v", when, err)
	}
}

// quiesce ends the faults that last (a broken step, a partition, a flipped
// condition: one-shot faults still hit the next call), lets the other owner
// go and waits, up to the horizon, for the document to settle; then it
// checks that the world matches it.
func (r *run[Spec, Status, S, P]) quiesce() {
	r.logf("lasting faults heal; the document must settle within %v", r.cfg.Horizon)
	r.mu.Lock()
	cut := len(r.partitioned) > 0
	r.mu.Unlock()
	if cut {
		r.markCut()
	}
	r.mu.Lock()
	clear(r.broken)
	clear(r.partitioned)
	clear(r.flips)
	r.disruptions++
	r.mu.Unlock()
	r.release()
	r.resume()
	r.mu.Lock()
	r.settleBy = time.Now().Add(r.cfg.Horizon)
	r.mu.Unlock()
	for len(r.failed()) == 0 { // a failed run's reconciles are parked
		synctest.Wait()
		obj, ok := r.get()
		if !ok {
			return
		}
		why, settled := r.settled(obj)
		if settled {
			r.logf("settled: %s", why)
			if why == held {
				if problem := r.unexplainedHold(obj.Spec.Intent(), status[Spec, Status, S, P](obj)); problem != "" {
					r.problem("%s", problem)
					return
				}
				if a := r.respond; a != nil {
					// The operator paged answers, and the document
					// must settle again.
					r.respond = nil
					r.act(*a)
					r.settleAgain()
					continue
				}
			}
			r.invariant("at the end")
			if obj != nil && r.world.Matches != nil && why != held {
				if err := r.world.Matches(r.ctx, obj); err != nil {
					r.worldProblem("the document settled (%s) but the world does not match: %v", why, err)
				}
			}
			return
		}
		r.mu.Lock()
		left := time.Until(r.settleBy)
		r.mu.Unlock()
		if left <= 0 {
			if asserted := r.assertedUnchecked(obj); asserted != "" {
				r.logf("not settled, and not held against the driver (%s): %s", asserted, why)
				return
			}
			r.problem("the document has not settled in the %v since faults stopped or an operator last answered: %s", r.cfg.Horizon, why)
			return
		}
		time.Sleep(min(time.Minute, left))
	}
}

// settleAgain gives the document, once the run quiesces, the whole
// horizon from now to settle: an operator's command written then is a
// change, as an intent is.
func (r *run[Spec, Status, S, P]) settleAgain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.settleBy.IsZero() {
		r.settleBy = time.Now().Add(r.cfg.Horizon)
	}
}

// held describes a document held in the Fault phase.
const held = "held for an operator"

// settled reports whether obj has settled, and describes where it is.
func (r *run[Spec, Status, S, P]) settled(obj *store.Object[Spec, Status]) (string, bool) {
	if obj == nil {
		return "removed", true
	}
	st := *status[Spec, Status, S, P](obj)
	intent := obj.Spec.Intent()
	if obj.Terminating() && r.final != nil {
		intent = *r.final
	}
	if hr, ok := any(obj.Spec).(driver.HasRequests); ok {
		asked := hr.Requests()
		for _, name := range r.cfg.Machine.Requests() {
			st = st.Request(name, append(asked[name], st.RequestCommands(name)...)...)
		}
	}
	where := fmt.Sprintf("intent %v, phase %v", intent, st.Phase)
	if obj.Terminating() {
		where += ", deletion requested"
	}
	if pending := pendingCommands(&st); pending != "" {
		return fmt.Sprintf("%s: operator commands never carried out: %s", where, pending), false
	}
	d, err := r.cfg.Machine.Decide(intent, st, time.Now())
	switch {
	case err != nil:
		return fmt.Sprintf("%s: cannot be decided: %v", where, err), false
	case d.Action == statemachine.Hold:
		return held, true
	case obj.Terminating():
		return fmt.Sprintf("%s: not removed (the machine decides %v)", where, d.Action), false
	case d.Action == statemachine.Nothing && !d.Final:
		if d.Refused != nil {
			return fmt.Sprintf("%s, intent refused: %s", where, d.Refused.Reason), true
		}
		return where, true
	}
	why := fmt.Sprintf("%s: the machine decides %v", where, d.Action)
	if st.Operation != nil {
		r.mu.Lock()
		rec := r.op(st.Operation.ID)
		why += fmt.Sprintf("; operation %s (%v), steps called: %s", rec.name, st.Operation.Phase, rec.describeCalls())
		r.mu.Unlock()
	}
	if len(d.Pending) > 0 {
		why += "; conditions that never held: " + joinRequires(d.Pending)
	}
	return why, false
}

// joinRequires joins requirements with commas.
func joinRequires(rs []statemachine.Require) string {
	parts := make([]string, len(rs))
	for i, req := range rs {
		parts[i] = req.String()
	}
	return strings.Join(parts, ", ")
}

// fingerprint describes the state a run has reached, for an exploration to
// tell states apart: the document's intent, phase, operation, failure and
// requests, the faults in force and the request tokens operations carried.
func (r *run[Spec, Status, S, P]) fingerprint() string {
	obj, _ := r.get()
	if obj == nil {
		return "removed" // nothing that happens next can matter
	}
	r.mu.Lock()
	faults := fmt.Sprint(r.broken, r.oneShot, r.touch)
	// The tokens operations carried so far: what the request checks
	// remember.
	carried := slices.Sorted(maps.Keys(r.servedBy))
	r.mu.Unlock()
	st := status[Spec, Status, S, P](obj)
	op := "-"
	if st.Operation != nil {
		op = fmt.Sprint(st.Operation.Phase, st.Operation.Done, st.Operation.Request, st.Operation.Attempts > 0)
	}
	reqs := make([]string, len(st.Requests))
	for i, rq := range st.Requests {
		reqs[i] = fmt.Sprint(rq.Name, len(rq.Tokens), len(rq.Served))
	}
	return fmt.Sprint(obj.Spec.Intent(), obj.Terminating(), st.Phase, st.Target, op, st.Failure != nil, st.Refused != nil, reqs, faults, carried,
		st.Paused != nil, len(st.Commands))
}
