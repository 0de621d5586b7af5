package driver

import (
	"fmt"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// refuseTerminating returns the error that refuses a change of obj's
// intent to intent when obj's deletion was requested: the driver serves the
// machine's final state from then on, whatever the spec says. It returns
// nil when the change is no such refusal.
func (d *phaseDriver[Spec, Status, S, P]) refuseTerminating(obj *store.Object[Spec, Status], intent S) error {
	if d.final == nil || !obj.Terminating() || intent == *d.final {
		return nil
	}
	return fmt.Errorf("%s %q: intent %v: %w: the intent is %v until it is removed (%w)",
		d.c.Kind(), obj.Key, intent, statemachine.ErrTerminating, *d.final, statemachine.ErrIntentRefused)
}

// terminatingRefusal returns the refusal to record in status when obj's
// spec names an intent other than the machine's final state after its
// deletion was requested and seen: a change written to the store without
// the driver's admission, which the driver does not act on. It keeps a
// refusal already recorded for the same intent. Nil means none.
func (d *phaseDriver[Spec, Status, S, P]) terminatingRefusal(obj *store.Object[Spec, Status], read statemachine.Status[S, P]) *statemachine.Refusal[S] {
	intent := obj.Spec.Intent()
	if d.final == nil || !obj.Terminating() || intent == *d.final {
		return nil
	}
	r := &statemachine.Refusal[S]{Intent: intent,
		Reason: fmt.Sprintf("deletion was requested: the intent is %v until the document is removed", *d.final)}
	changed := read.ObservedDeletion && obj.Generation != read.ObservedGeneration
	if kept := read.Refused; changed || kept != nil && *kept == *r {
		return r
	}
	return nil
}
