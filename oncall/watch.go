package oncall

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/store"
)

// EventType says what an [Event] reports.
type EventType string

// The types of events.
const (
	// EventList: Views are every selected document as it is at Revision.
	// A watch begins with one, and sends one again when it had to start
	// over (the store compacted the revision it watched from).
	EventList EventType = "list"
	// EventChange: Views holds one selected document as it is now, after
	// it was created or changed.
	EventChange EventType = "change"
	// EventDelete: Views holds one document (its Meta) that was deleted.
	EventDelete EventType = "delete"
)

// Event is what [Client.Watch] reports.
type Event struct {
	Type     EventType `json:"type"`
	Views    []View    `json:"views"`
	Revision int64     `json:"revision"`
}

// Watch calls each with the documents sel selects, then with each change
// to them, until ctx ends (it then returns ctx.Err()) or each returns an
// error (it then returns it). A document that stops matching sel is not
// reported; a deleted document is, when sel has no Key or it is its key.
func (c *Client) Watch(ctx context.Context, sel Selection, each func(Event) error) error {
	match, err := c.matcher(ctx, sel)
	if err != nil {
		return err
	}
	for {
		var from int64
		if sel.Key != "" {
			// One document's revision may be long compacted: watch the
			// kind from now, read before the document so that no change
			// falls between.
			res, err := c.b.List(ctx, sel.Kind, store.ListOptions{Limit: 1})
			if err != nil {
				return fmt.Errorf("oncall: listing %s: %w", sel.Kind, err)
			}
			from = res.Revision
		}
		views, rev, err := c.selectAt(ctx, sel)
		if err != nil {
			return err
		}
		if sel.Key != "" {
			rev = from
		}
		if err := each(Event{Type: EventList, Views: views, Revision: rev}); err != nil {
			return err
		}
		err = c.follow(ctx, sel, rev, match, each)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, store.ErrCompacted), errors.Is(err, store.ErrWatchLagged):
			continue // list again: nothing is missed
		}
		return err
	}
}

// follow reports the changes of sel's kind after rev.
func (c *Client) follow(ctx context.Context, sel Selection, rev int64, match func(View) bool, each func(Event) error) error {
	w, err := c.b.Watch(ctx, sel.Kind, rev)
	if err != nil {
		return fmt.Errorf("oncall: watching %s: %w", sel.Kind, err)
	}
	defer w.Close()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return err
		}
		d := ev.Document
		if sel.Key != "" && d.Meta.Key != sel.Key {
			continue
		}
		if ev.Type == store.Deleted {
			err = each(Event{Type: EventDelete, Views: []View{{Meta: d.Meta}}, Revision: ev.Revision})
		} else {
			v, derr := Decode(d)
			if derr != nil {
				return derr
			}
			if !match(v) {
				continue
			}
			err = each(Event{Type: EventChange, Views: []View{v}, Revision: ev.Revision})
		}
		if err != nil {
			return err
		}
	}
}
