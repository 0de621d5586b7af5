package oncall

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
)

// ActionSetIntent names [Client.SetIntent] in its history entries.
const ActionSetIntent = "set-intent"

// SetIntent writes intent, a state of the kind's machine as its String
// form, into the spec field named field of the document of kind and key
// (the top-level JSON field the user's spec type keeps its intent in),
// conditional on the revision read, as the user's API would. It is checked
// first against what is stored in that revision: on a document whose
// deletion was requested, an intent other than the machine's final state
// is refused with an error matching statemachine.ErrTerminating and
// statemachine.ErrIntentRefused; otherwise the machine's Admit decides,
// and its refusal matches statemachine.ErrIntentRefused. Setting the
// intent the spec already holds changes nothing. On a kind no machine
// drives it fails with [ErrNotDriven] before anything is written.
func (c *Client) SetIntent(ctx context.Context, kind, key, field, intent string) error {
	if err := c.canAct(); err != nil {
		return err
	}
	r, err := c.driven(ctx, kind)
	if err != nil {
		return err
	}
	m, err := r.Build()
	if err != nil {
		return err
	}
	value, err := json.Marshal(intent)
	if err != nil {
		return err
	}
	var (
		changed bool
		uid     string
		phase   string
	)
	err = c.retry(ctx, func() error {
		doc, err := c.b.Get(ctx, kind, key)
		if err != nil {
			return err
		}
		o, err := Decode(doc)
		if err != nil {
			return err
		}
		spec := map[string]json.RawMessage{}
		if len(doc.Spec) > 0 && string(doc.Spec) != "null" {
			if err := json.Unmarshal(doc.Spec, &spec); err != nil {
				return fmt.Errorf("the spec is not a JSON object: %w", err)
			}
		}
		var current string
		if changed = json.Unmarshal(spec[field], &current) != nil || current != intent; !changed {
			return nil
		}
		if final, ok := finalState(m); ok && doc.Meta.Terminating() && intent != final {
			return fmt.Errorf("intent %s: %w: the intent is %s until it is removed (%w)",
				intent, statemachine.ErrTerminating, final, statemachine.ErrIntentRefused)
		}
		phase = o.Phase
		if phase == "" {
			phase = m.Initial()
		}
		if err := m.Admit(intent, phase); err != nil {
			return err
		}
		spec[field] = value
		if doc.Spec, err = json.Marshal(spec); err != nil {
			return err
		}
		uid = doc.Meta.UID
		_, err = c.b.UpdateSpec(ctx, doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("oncall: %s of %s %q: %w", ActionSetIntent, kind, key, err)
	}
	if !changed {
		return nil
	}
	return c.record(ctx, kind, key, uid, history.Entry{Name: ActionSetIntent, Phase: phase, Reason: "intent " + intent})
}

// finalState returns the state of m's final pair, if it has one.
func finalState(m *statemachine.Machine[string, string]) (string, bool) {
	for _, s := range m.Definition().Settled {
		if s.Final {
			return s.State, true
		}
	}
	return "", false
}
