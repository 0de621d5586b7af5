package oncall

import (
	"context"
	"fmt"

	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// ErrRemoved is returned by [Client.Await] when the document is removed
// (deleted and gone, or replaced by another of the same key) before it
// settled. It matches store.ErrNotFound too.
var ErrRemoved = fmt.Errorf("oncall: document removed: %w", store.ErrNotFound)

// Await waits until the document of kind and key has settled after the
// write of its spec's generation (or of the generation it holds when Await
// begins, if later): its controller observed that generation, or a later
// one, and
// the intent it serves (View.State) is settled in its phase by the machine
// registered for kind. It returns the document then, and otherwise:
//
//   - a *statemachine.FaultError (matching statemachine.ErrHeldInFault),
//     with the failure, when the document is held in the Fault phase;
//   - a *statemachine.RefusalError (matching statemachine.ErrIntentRefused)
//     when the machine refused the intent in the document's phase;
//   - [ErrRemoved] when the document is removed: the end of a document
//     whose intent is the machine's final state;
//   - registry.ErrUnregistered when no controller registered kind, the
//     context's error when ctx ends first, or the store's error.
//
// Await is built on the store's watch, as [Client.Wait] is, and reads the
// document again after a minute without a change of it.
func (c *Client) Await(ctx context.Context, kind, key string, generation int64) (View, error) {
	m, err := c.Machine(ctx, kind)
	if err != nil {
		return View{}, err
	}
	var final *string
	for _, s := range m.Definition().Settled {
		if s.Final {
			final = &s.State
		}
	}
	var (
		uid  string
		seen View
	)
	err = wait.Document(ctx, c.b, kind, key, func(doc store.Document, found bool) (bool, error) {
		if uid == "" && found {
			uid, generation = doc.Meta.UID, max(generation, doc.Meta.Generation)
		}
		if !found || doc.Meta.UID != uid {
			return false, fmt.Errorf("oncall: %s %q: %w", kind, key, ErrRemoved)
		}
		o, err := Decode(doc)
		if err != nil {
			return false, err
		}
		seen = o
		if o.ObservedGeneration < generation || o.ObservedDeletion != o.Meta.Terminating() {
			return false, nil
		}
		st := statemachine.Status[string, string]{Phase: o.Phase, Target: o.State, Operation: o.Operation,
			Failure: o.Failure, Refused: o.Refused}
		ok, err := m.Reached(o.State, st)
		if err != nil {
			return false, fmt.Errorf("oncall: %s %q: %w", kind, key, err)
		}
		// A document settled at its final pair is about to be removed.
		return ok && (final == nil || o.State != *final), nil
	})
	if err != nil {
		return View{}, err
	}
	return seen, nil
}
