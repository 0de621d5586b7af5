package driver

import (
	"context"
	"fmt"

	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/store"
)

// ErrRemoved is returned by [Driver.Await] when the document is removed
// (deleted and gone, or replaced by another of the same key) before it
// settled. It matches store.ErrNotFound too.
var ErrRemoved = fmt.Errorf("driver: document removed: %w", store.ErrNotFound)

// AwaitResync is how long [Driver.Await] waits for a change of its
// document before it reads the document again: a watch that lost a change
// delays the answer by at most this long.
const AwaitResync = wait.Resync

// Await waits until the document written, as a write of its spec returned
// it ([Driver.Create], [Driver.UpdateSpec], the collection's writes), has
// settled: its controller observed that generation (and its deletion, if it
// is Terminating) or a later one, and its pair is settled at the intent it
// holds now. It returns nil then, and otherwise:
//
//   - a *statemachine.FaultError (matching statemachine.ErrHeldInFault),
//     with the failure, when the document is held in the Fault phase for
//     an operator;
//   - a *statemachine.RefusalError (matching statemachine.ErrIntentRefused)
//     when the machine refused the intent in the phase the document is in;
//   - [ErrRemoved] when the document is removed: the end of a document
//     whose intent is the machine's final state;
//   - the context's error when ctx ends first, or the store's error.
//
// Await reads the document from the store and watches it, judging each
// change, and reads it again after [AwaitResync] without one. It never
// judges the status an earlier intent left: a status whose observed
// generation is below written's is work in progress. Await blocks, for a
// program that wrote an intent; a step that waits for its children uses
// [Driver.Settle], which does not.
func (d *Driver[Spec, Status]) Await(ctx context.Context, written *store.Object[Spec, Status]) error {
	kind, key := d.coll.Kind(), written.Key
	return wait.Document(ctx, d.coll.Backend(), kind, key, func(doc store.Document, found bool) (bool, error) {
		if !found || written.UID != "" && doc.Meta.UID != written.UID {
			return false, fmt.Errorf("%s %q: %w", kind, key, ErrRemoved)
		}
		obj, err := d.coll.Decode(doc)
		if err != nil {
			return false, err
		}
		return d.impl.settled(obj, written.Generation)
	})
}

// settled judges obj for [Driver.Await]: see there.
func (d *phaseDriver[Spec, Status, S, P]) settled(obj *store.Object[Spec, Status], generation int64) (bool, error) {
	st := d.machineStatus(obj)
	if st.ObservedGeneration < max(generation, 1) || st.ObservedDeletion != obj.Terminating() {
		return false, nil
	}
	intent := d.intent(obj)
	ok, err := d.m.Reached(intent, st)
	if err != nil {
		return false, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)
	}
	// A document settled at its final pair is about to be removed.
	return ok && (d.final == nil || intent != *d.final), nil
}
