package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// quiet is how long the suite waits to see that no further event comes.
const quiet = 200 * time.Millisecond

// change is an event the suite expects. A zero rev is known only to lie
// between its neighbours' (Delete does not return the revision).
type change struct {
	typ store.EventType
	key string
	uid string
	rev int64
}

// expectEvents reads len(want) events from w and compares them with want:
// same order, types, keys and UIDs, known revisions equal, revisions
// strictly growing from after, and every document's revision equal to the
// event's for Added and Modified. It returns the events' revisions.
func expectEvents(ctx context.Context, w store.Watch, after int64, want []change) ([]int64, error) {
	last := after
	revs := make([]int64, 0, len(want))
	for i, c := range want {
		e, err := w.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("event %d of %d (want %v %q): %w", i+1, len(want), c.typ, c.key, err)
		}
		m := e.Document.Meta
		switch {
		case e.Type != c.typ || m.Key != c.key:
			return nil, fmt.Errorf("event %d: got %v %q at %d, want %v %q", i+1, e.Type, m.Key, e.Revision, c.typ, c.key)
		case c.uid != "" && m.UID != c.uid:
			return nil, fmt.Errorf("event %d: %v %q carries UID %q, want %q", i+1, e.Type, m.Key, m.UID, c.uid)
		case e.Revision <= last:
			return nil, fmt.Errorf("event %d: revision %d after %d: not in revision order", i+1, e.Revision, last)
		case c.rev != 0 && e.Revision != c.rev:
			return nil, fmt.Errorf("event %d: %v %q at revision %d, want %d", i+1, e.Type, m.Key, e.Revision, c.rev)
		case e.Type != store.Deleted && m.Revision != e.Revision:
			return nil, fmt.Errorf("event %d: document revision %d differs from event revision %d", i+1, m.Revision, e.Revision)
		}
		last = e.Revision
		revs = append(revs, last)
	}
	return revs, nil
}

// expectQuiet checks that w delivers nothing more for a while.
func expectQuiet(ctx context.Context, w store.Watch) error {
	qctx, cancel := context.WithTimeout(ctx, quiet)
	defer cancel()
	e, err := w.Next(qctx)
	switch {
	case err == nil:
		return fmt.Errorf("unexpected extra event %v %q at %d", e.Type, e.Document.Meta.Key, e.Revision)
	case !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("waiting for no event: %w", err)
	}
	return nil
}

// history makes a sequence of changes to widgets and a gadget, and returns
// the widget changes expected in a watch.
func history(ctx context.Context, b store.Backend) ([]change, error) {
	var want []change
	add := func(typ store.EventType, d store.Document, known bool) {
		c := change{typ: typ, key: d.Meta.Key, uid: d.Meta.UID}
		if known {
			c.rev = d.Meta.Revision
		}
		want = append(want, c)
	}
	a, err := b.Create(ctx, newDoc(widget, "a", 1))
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	add(store.Added, a, true)
	c := newDoc(widget, "c", 1)
	c.Meta.Finalizers = []string{"example.com/f"}
	if c, err = b.Create(ctx, c); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	add(store.Added, c, true)
	if _, err := b.Create(ctx, newDoc(gadget, "a", 1)); err != nil {
		return nil, fmt.Errorf("create gadget: %w", err)
	}
	a.Spec = spec(2)
	if a, err = b.UpdateSpec(ctx, a); err != nil {
		return nil, fmt.Errorf("update spec: %w", err)
	}
	add(store.Modified, a, true)
	bb, err := b.Create(ctx, newDoc(widget, "b", 1))
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	add(store.Added, bb, true)
	a.Status = spec(3)
	if a, err = b.UpdateStatus(ctx, a); err != nil {
		return nil, fmt.Errorf("update status: %w", err)
	}
	add(store.Modified, a, true)
	if err := b.Delete(ctx, widget, "b", store.DeleteOptions{}); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	add(store.Deleted, bb, false)
	if err := b.Delete(ctx, widget, "c", store.DeleteOptions{}); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	add(store.Modified, c, false) // now terminating
	if c, err = b.Get(ctx, widget, "c"); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	for i := range 3 {
		a.Status = spec(10 + i)
		if a, err = b.UpdateStatus(ctx, a); err != nil {
			return nil, fmt.Errorf("update status: %w", err)
		}
		add(store.Modified, a, true)
	}
	c.Meta.Finalizers = nil
	if _, err := b.UpdateSpec(ctx, c); err != nil {
		return nil, fmt.Errorf("remove last finalizer: %w", err)
	}
	add(store.Deleted, c, false)
	if _, err := b.Create(ctx, newDoc(gadget, "z", 1)); err != nil {
		return nil, fmt.Errorf("create gadget: %w", err)
	}
	bb, err = b.Create(ctx, newDoc(widget, "b", 5))
	if err != nil {
		return nil, fmt.Errorf("create again: %w", err)
	}
	add(store.Added, bb, true)
	return want, nil
}

// checkWatchOrder: a watch from a list's revision delivers every later
// change of its kind, in revision order, exactly once, with the document;
// changes of other kinds and writes that change nothing are not delivered.
func checkWatchOrder(ctx context.Context, b store.Backend) error {
	if _, err := b.Create(ctx, newDoc(widget, "before", 0)); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	_, rev, err := listKeys(ctx, b, widget, store.ListOptions{})
	if err != nil {
		return err
	}
	w, err := b.Watch(ctx, widget, rev)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	// A second watch reads while the changes are made.
	live, err := b.Watch(ctx, widget, rev)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer live.Close()
	type result struct {
		revs []int64
		err  error
	}
	want := make(chan []change, 1)
	done := make(chan result, 1)
	go func() {
		select {
		case changes := <-want:
			revs, err := expectEvents(ctx, live, rev, changes)
			done <- result{revs, err}
		case <-ctx.Done():
			done <- result{nil, ctx.Err()}
		}
	}()
	changes, err := history(ctx, b)
	if err != nil {
		return err
	}
	want <- changes
	if r := <-done; r.err != nil {
		return fmt.Errorf("watch read during the changes: %w", r.err)
	}
	if _, err := expectEvents(ctx, w, rev, changes); err != nil {
		return fmt.Errorf("watch read after the changes: %w", err)
	}
	if err := expectQuiet(ctx, w); err != nil {
		return err
	}
	// The gadget watch sees only gadgets.
	g, err := b.Watch(ctx, gadget, rev)
	if err != nil {
		return fmt.Errorf("watch gadgets: %w", err)
	}
	defer g.Close()
	if _, err := expectEvents(ctx, g, rev, []change{{typ: store.Added, key: "a"}, {typ: store.Added, key: "z"}}); err != nil {
		return fmt.Errorf("gadget watch: %w", err)
	}
	return expectQuiet(ctx, g)
}

// checkWatchResume: a watch from the revision of any event delivers exactly
// the changes after it; a closed watch fails with ErrClosed.
func checkWatchResume(ctx context.Context, b store.Backend) error {
	start, err := revision(ctx, b)
	if err != nil {
		return err
	}
	changes, err := history(ctx, b)
	if err != nil {
		return err
	}
	// Learn every event's revision from a full watch.
	w, err := b.Watch(ctx, widget, start)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	revs, err := expectEvents(ctx, w, start, changes)
	if err != nil {
		w.Close()
		return fmt.Errorf("watch: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("second close: %w", err)
	}
	if _, err := w.Next(ctx); !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("next after close: got %v, want ErrClosed", err)
	}
	for i, rev := range revs {
		w, err := b.Watch(ctx, widget, rev)
		if err != nil {
			return fmt.Errorf("watch from revision %d: %w", rev, err)
		}
		_, err = expectEvents(ctx, w, rev, changes[i+1:])
		if err == nil && (i == 0 || i == len(revs)-1) {
			err = expectQuiet(ctx, w)
		}
		w.Close()
		if err != nil {
			return fmt.Errorf("watch from revision %d (event %d): %w", rev, i+1, err)
		}
	}
	// A watch from a later revision waits for changes after it.
	now, err := revision(ctx, b)
	if err != nil {
		return err
	}
	w, err = b.Watch(ctx, widget, now)
	if err != nil {
		return fmt.Errorf("watch from the current revision: %w", err)
	}
	defer w.Close()
	if err := expectQuiet(ctx, w); err != nil {
		return err
	}
	d, err := b.Create(ctx, newDoc(widget, "late", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	_, err = expectEvents(ctx, w, now, []change{{typ: store.Added, key: "late", uid: d.Meta.UID, rev: d.Meta.Revision}})
	return err
}

// checkWatchAhead: a watch from a revision the store has not reached yet
// starts without error and waits; once the store passes the revision it
// delivers exactly the changes after it, whether they are read as they are
// made or later, and none of the changes up to it.
func checkWatchAhead(ctx context.Context, b store.Backend) error {
	now, err := revision(ctx, b)
	if err != nil {
		return err
	}
	// On a store whose revision grows by one per write, the first three
	// writes lie at or before from.
	from := now + 3
	w, err := b.Watch(ctx, widget, from)
	if err != nil {
		return fmt.Errorf("watch from revision %d, ahead of the store's %d: %w", from, now, err)
	}
	defer w.Close()
	live, err := b.Watch(ctx, widget, from)
	if err != nil {
		return fmt.Errorf("watch from revision %d, ahead of the store's %d: %w", from, now, err)
	}
	defer live.Close()
	if err := expectQuiet(ctx, live); err != nil {
		return fmt.Errorf("watch from revision %d before the store reaches it: %w", from, err)
	}
	// Write until two changes lie after from; the live watch is read after
	// each write.
	var want []change
	last := from
	for i := 0; len(want) < 2; i++ {
		if i == 50 {
			return fmt.Errorf("50 writes did not take the store's revision past %d", from)
		}
		d, err := b.Create(ctx, newDoc(widget, fmt.Sprint("w", i), i))
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if d.Meta.Revision <= from {
			if err := expectQuiet(ctx, live); err != nil {
				return fmt.Errorf("watch from revision %d after a change at %d: %w", from, d.Meta.Revision, err)
			}
			continue
		}
		c := change{typ: store.Added, key: d.Meta.Key, uid: d.Meta.UID, rev: d.Meta.Revision}
		want = append(want, c)
		if _, err := expectEvents(ctx, live, last, []change{c}); err != nil {
			return fmt.Errorf("watch from revision %d, read as the store passes it: %w", from, err)
		}
		last = d.Meta.Revision
	}
	if err := expectQuiet(ctx, live); err != nil {
		return fmt.Errorf("watch from revision %d, read as the store passes it: %w", from, err)
	}
	if _, err := expectEvents(ctx, w, from, want); err != nil {
		return fmt.Errorf("watch from revision %d, read after the store passed it: %w", from, err)
	}
	if err := expectQuiet(ctx, w); err != nil {
		return fmt.Errorf("watch from revision %d, read after the store passed it: %w", from, err)
	}
	return nil
}

// checkWatchContext: Next returns the context's error when it is done and
// the watch stays usable.
func checkWatchContext(ctx context.Context, b store.Backend) error {
	rev, err := revision(ctx, b)
	if err != nil {
		return err
	}
	w, err := b.Watch(ctx, widget, rev)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = w.Next(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("next with an expiring context: got %v, want context.DeadlineExceeded", err)
	}
	d, err := b.Create(ctx, newDoc(widget, "x", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Next(cancelled); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("next with a cancelled context: got %v, want context.Canceled", err)
	}
	// A Next waiting in another goroutine returns when its context ends.
	blocked, cancel := context.WithCancel(ctx)
	w2, err := b.Watch(ctx, widget, d.Meta.Revision)
	if err != nil {
		cancel()
		return fmt.Errorf("watch: %w", err)
	}
	defer w2.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := w2.Next(blocked)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("waiting next after cancel: got %v, want context.Canceled", err)
	}
	_, err = expectEvents(ctx, w, rev, []change{{typ: store.Added, key: "x", uid: d.Meta.UID, rev: d.Meta.Revision}})
	if err != nil {
		return fmt.Errorf("after context errors: %w", err)
	}
	return nil
}

// checkCompacted: after compaction, a watch from an older revision fails
// with ErrCompacted, whether it starts then or started before and had not
// read the discarded changes; a watch from the compaction revision works.
func checkCompacted(ctx context.Context, b store.Backend) error {
	c, ok := b.(backend.Compactor)
	if !ok {
		return fmt.Errorf("%T does not implement backend.Compactor, which the suite needs to check ErrCompacted", b)
	}
	start, err := revision(ctx, b)
	if err != nil {
		return err
	}
	early, err := b.Watch(ctx, widget, start)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer early.Close()
	d, err := b.Create(ctx, newDoc(widget, "k", 0))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	revs := []int64{d.Meta.Revision}
	for i := range 5 {
		d.Status = spec(i + 1)
		if d, err = b.UpdateStatus(ctx, d); err != nil {
			return fmt.Errorf("update status: %w", err)
		}
		revs = append(revs, d.Meta.Revision)
	}
	at := revs[3]
	if err := c.Compact(ctx, at); err != nil {
		return fmt.Errorf("compact at %d: %w", at, err)
	}
	if _, err := early.Next(ctx); !errors.Is(err, store.ErrCompacted) {
		return fmt.Errorf("next on a watch overtaken by compaction: got %v, want ErrCompacted", err)
	}
	if _, err := early.Next(ctx); !errors.Is(err, store.ErrCompacted) {
		return fmt.Errorf("second next on a failed watch: got %v, want ErrCompacted again", err)
	}
	for _, from := range []int64{start, revs[0], revs[2]} {
		w, err := b.Watch(ctx, widget, from)
		if err == nil {
			_, err = w.Next(ctx)
			w.Close()
		}
		if !errors.Is(err, store.ErrCompacted) {
			return fmt.Errorf("watch from revision %d after compaction at %d: got %v, want ErrCompacted", from, at, err)
		}
	}
	w, err := b.Watch(ctx, widget, at)
	if err != nil {
		return fmt.Errorf("watch from the compaction revision %d: %w", at, err)
	}
	defer w.Close()
	_, err = expectEvents(ctx, w, at, []change{
		{typ: store.Modified, key: "k", rev: revs[4]},
		{typ: store.Modified, key: "k", rev: revs[5]},
	})
	if err != nil {
		return fmt.Errorf("watch from the compaction revision: %w", err)
	}
	if err := c.Compact(ctx, d.Meta.Revision+1000); !errors.Is(err, store.ErrInvalid) {
		return fmt.Errorf("compact beyond the current revision: got %v, want ErrInvalid", err)
	}
	return nil
}
