package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// UpdateSpec changes the spec of the document under key with set and writes
// it, conditional on the revision it read. When set changes the intent, the
// new intent is first checked with the machine's Admit against the phase read
// in that same revision, so an intent the document can no longer reach (past
// a point of no return, or declared unreachable) is never written: the error
// is a *statemachine.RefusalError naming the intent and the phase, and
// matches statemachine.ErrIntentRefused. A change of intent on a document
// whose deletion was requested is refused too, with an error matching
// statemachine.ErrTerminating and statemachine.ErrIntentRefused: its
// intent is the machine's final state until it is removed.
//
// On a conflict UpdateSpec reads the document again and calls set again on
// the fresh spec, up to Config.ConflictRetries times. When set changes
// nothing, nothing is written and the document is returned as read. It
// returns the document as stored.
func (d *Driver[Spec, Status]) UpdateSpec(ctx context.Context, key string, set func(*Spec)) (*store.Object[Spec, Status], error) {
	return d.impl.updateSpec(ctx, key, set)
}

// Retire ends the life of every document selected by opts (its children,
// with store.ListOptions.OwnerUID) and reports whether they are gone. It is
// meant for a step of a parent document's operation: the parent only
// changes its children's intent, and each child's own driver runs its
// cleanup and removes it; the parent never reaches into that cleanup.
//
// For each selected document Retire calls set on its spec and writes it as
// [Driver.UpdateSpec] does (set typically sets the final intent, State =
// Deleted). With a nil set it deletes the document through the store instead,
// which its driver treats the same way. It returns statemachine.Done when no
// selected document is left and statemachine.Progressed while some remain,
// so the parent's step runs again until they are gone; a write or list that
// fails gives statemachine.Failed and the error. With a non-nil set, the
// machine must have a final pair (otherwise the documents would settle and
// stay): it returns statemachine.FailedTerminal if not.
func (d *Driver[Spec, Status]) Retire(ctx context.Context, opts store.ListOptions, set func(*Spec)) (statemachine.Outcome, error) {
	return d.impl.cascade(ctx, opts, set, true)
}

// Settle changes the intent of every document selected by opts with set, as
// [Driver.Retire] does, and reports whether each has reached it: it returns
// statemachine.Done once the machine decides nothing more for each of them,
// and statemachine.Progressed before. A nil set changes nothing and only
// waits. A document held in the Fault phase gives statemachine.Failed and an
// error naming it and its failure, so the parent retries with backoff and
// shows why it waits.
func (d *Driver[Spec, Status]) Settle(ctx context.Context, opts store.ListOptions, set func(*Spec)) (statemachine.Outcome, error) {
	return d.impl.cascade(ctx, opts, set, false)
}

func (d *phaseDriver[Spec, Status, S, P]) updateSpec(ctx context.Context, key string, set func(*Spec)) (*store.Object[Spec, Status], error) {
	obj, err := d.c.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return d.writeSpec(ctx, obj, set)
}

// writeSpec applies set to obj's spec and writes it, reading obj again and
// applying set again on a conflict.
func (d *phaseDriver[Spec, Status, S, P]) writeSpec(ctx context.Context, obj *store.Object[Spec, Status], set func(*Spec)) (*store.Object[Spec, Status], error) {
	for attempt := 0; ; attempt++ {
		before, err := d.c.Encode(obj)
		if err != nil {
			return nil, err
		}
		next := *obj
		set(&next.Spec)
		after, err := d.c.Encode(&next)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(before.Spec, after.Spec) {
			return obj, nil
		}
		if intent := next.Spec.Intent(); intent != obj.Spec.Intent() {
			if err := d.refuseTerminating(obj, intent); err != nil {
				return nil, err
			}
			if err := d.m.Admit(intent, d.machineStatus(obj).Phase); err != nil {
				return nil, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)
			}
		}
		written, err := d.c.UpdateSpec(ctx, &next)
		if !errors.Is(err, store.ErrConflict) || attempt == d.conflicts {
			return written, err
		}
		if obj, err = d.c.Get(ctx, obj.Key); err != nil {
			return nil, err
		}
	}
}

func (d *phaseDriver[Spec, Status, S, P]) cascade(ctx context.Context, opts store.ListOptions, set func(*Spec), untilGone bool) (statemachine.Outcome, error) {
	if untilGone && set != nil && d.final == nil {
		return statemachine.FailedTerminal, fmt.Errorf("%w: %s documents cannot be retired by intent: machine %s has no final pair",
			ErrInvalidConfig, d.c.Kind(), d.m.Name())
	}
	objs, _, err := d.c.List(ctx, opts)
	if err != nil {
		return statemachine.Failed, err
	}
	left := 0
	for _, obj := range objs {
		switch {
		case untilGone && set == nil:
			err = d.c.Delete(ctx, obj.Key, store.DeleteOptions{UID: obj.UID})
		case set != nil:
			obj, err = d.writeSpec(ctx, obj, set)
		}
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return statemachine.Failed, err
		}
		if untilGone {
			left++
			continue
		}
		dec, err := d.m.Decide(d.intent(obj), d.machineStatus(obj), time.Now())
		switch {
		case err != nil:
			return statemachine.Failed, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)
		case dec.Action == statemachine.Hold:
			return statemachine.Failed, fmt.Errorf("%s %q is held in phase %v: %s", d.c.Kind(), obj.Key, dec.Phase, dec.Reason)
		case dec.Action != statemachine.Nothing:
			left++
		}
	}
	if left > 0 {
		return statemachine.Progressed, nil
	}
	return statemachine.Done, nil
}
