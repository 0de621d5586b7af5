package oncall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// ErrNoSelection is returned, wrapped, for a [Selection] that sets none of
// its criteria: selecting every document takes All, so that a forgotten
// flag never acts on a whole kind.
var ErrNoSelection = errors.New("oncall: the selection selects nothing: set a key, labels, phases, stuck or all")

// Selection selects documents of one kind: those that meet every criterion
// it sets. At least one must be set; All alone selects every document.
type Selection struct {
	Kind string
	// Key selects the one document of that key.
	Key string
	// Selector selects the documents whose labels match it.
	Selector store.Selector
	// Phases selects the documents in one of these phases.
	Phases []string
	// Stuck selects the documents [View.Stuck] finds stuck by the kind's
	// registered machine.
	Stuck bool
	// All selects every document: the criterion to give when no other is.
	All bool
}

// selectionJSON is a Selection as JSON: its selector as text.
type selectionJSON struct {
	Kind     string   `json:"kind"`
	Key      string   `json:"key,omitempty"`
	Selector string   `json:"selector,omitempty"`
	Phases   []string `json:"phases,omitempty"`
	Stuck    bool     `json:"stuck,omitempty"`
	All      bool     `json:"all,omitempty"`
}

// MarshalJSON writes sel with its label selector as text.
func (sel Selection) MarshalJSON() ([]byte, error) {
	return json.Marshal(selectionJSON{sel.Kind, sel.Key, sel.Selector.String(), sel.Phases, sel.Stuck, sel.All})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (sel *Selection) UnmarshalJSON(b []byte) error {
	var j selectionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	s, err := store.ParseSelector(j.Selector)
	if err != nil {
		return err
	}
	*sel = Selection{Kind: j.Kind, Key: j.Key, Selector: s, Phases: j.Phases, Stuck: j.Stuck, All: j.All}
	return nil
}

// Check returns an error matching ErrNoSelection when sel sets no
// criterion, or store.ErrInvalid for an invalid kind or selector.
func (sel Selection) Check() error {
	switch {
	case sel.Kind == "":
		return fmt.Errorf("%w: a selection needs a kind", store.ErrInvalid)
	case sel.Selector.Validate() != nil:
		return sel.Selector.Validate()
	case sel.Key == "" && sel.Selector.Empty() && len(sel.Phases) == 0 && !sel.Stuck && !sel.All:
		return fmt.Errorf("%w (kind %s)", ErrNoSelection, sel.Kind)
	}
	return nil
}

// Select returns the documents sel selects, in key order.
func (c *Client) Select(ctx context.Context, sel Selection) ([]View, error) {
	views, _, err := c.selectAt(ctx, sel)
	return views, err
}

// selectAt returns the documents sel selects and the revision of the
// store they were read at.
func (c *Client) selectAt(ctx context.Context, sel Selection) ([]View, int64, error) {
	match, err := c.matcher(ctx, sel)
	if err != nil {
		return nil, 0, err
	}
	var (
		docs []store.Document
		rev  int64
	)
	if sel.Key != "" {
		d, err := c.b.Get(ctx, sel.Kind, sel.Key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("oncall: %s %q: %w", sel.Kind, sel.Key, err)
		}
		docs, rev = []store.Document{d}, d.Meta.Revision
	} else if docs, rev, err = c.listAt(ctx, sel.Kind, store.ListOptions{Selector: sel.Selector}); err != nil {
		return nil, 0, err
	}
	var out []View
	for _, d := range docs {
		v, err := Decode(d)
		if err != nil {
			return nil, 0, err
		}
		if match(v) {
			out = append(out, v)
		}
	}
	return out, rev, nil
}

// matcher returns whether a document belongs to sel.
func (c *Client) matcher(ctx context.Context, sel Selection) (func(View) bool, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	var m *statemachine.Machine[string, string]
	if sel.Stuck {
		var err error
		if m, err = c.Machine(ctx, sel.Kind); err != nil {
			return nil, err
		}
	}
	return func(v View) bool {
		return (sel.Key == "" || v.Meta.Key == sel.Key) &&
			sel.Selector.Matches(v.Meta.Labels) &&
			(len(sel.Phases) == 0 || slices.Contains(sel.Phases, v.Phase)) &&
			(!sel.Stuck || len(v.Stuck(m, c.now())) > 0)
	}, nil
}

// listAt returns every document of kind opts selects, following continue
// tokens, and the revision of the store the first page was read at.
func (c *Client) listAt(ctx context.Context, kind string, opts store.ListOptions) ([]store.Document, int64, error) {
	var (
		out []store.Document
		rev int64
	)
	for {
		res, err := c.b.List(ctx, kind, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("oncall: listing %s: %w", kind, err)
		}
		if rev == 0 {
			rev = res.Revision
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, rev, nil
		}
		opts.Continue = res.Continue
	}
}
