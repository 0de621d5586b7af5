package wait

import (
	"context"
	"errors"
	"time"

	"github.com/tendhq/tend/store"
)

// Resync is how long [Document] waits for a change of its document before
// it reads the document again: a watch that lost a change delays the
// answer by at most this long.
const Resync = time.Minute

// Store is what [Document] reads and watches.
type Store interface {
	Get(ctx context.Context, kind, key string) (store.Document, error)
	List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error)
	Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error)
}

// Document waits for the document of kind and key to be what judge wants.
// It reads the document and watches its changes, and calls judge with each
// state of it, in revision order and never twice for one revision, until
// judge returns true or an error, which it returns. judge is called with
// found false when the document is gone. Document reads the document again
// after [Resync] without a change of it, after a deletion, and when the
// watch must start again (store.ErrCompacted, store.ErrWatchLagged). It
// returns ctx.Err() when ctx ends first, and the store's other errors.
//
// The watch starts at the later of the document's revision and the
// store's, read before the document: a store that keeps little history
// (a snapshot) still has it.
func Document(ctx context.Context, b Store, kind, key string, judge func(doc store.Document, found bool) (bool, error)) error {
	for {
		head, err := b.List(ctx, kind, store.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		doc, err := b.Get(ctx, kind, key)
		found := err == nil
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		}
		if ok, err := judge(doc, found); ok || err != nil {
			return err
		}
		from := max(head.Revision, doc.Meta.Revision)
		w, err := b.Watch(ctx, kind, from)
		switch {
		case errors.Is(err, store.ErrCompacted) || errors.Is(err, store.ErrWatchLagged):
			if err := Sleep(ctx, Resync); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		ok, err := changes(ctx, w, key, doc.Meta.Revision, judge)
		w.Close()
		switch {
		case ok || err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
}

// changes judges each change of the document under key that w delivers
// after revision seen, until judge says it is done (true, or an error) or
// the document must be read again (false, nil).
func changes(ctx context.Context, w store.Watch, key string, seen int64, judge func(store.Document, bool) (bool, error)) (bool, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, Resync)
		ev, err := w.Next(wctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) &&
			!errors.Is(err, store.ErrCompacted) && !errors.Is(err, store.ErrWatchLagged):
			return false, err
		case err != nil:
			return false, nil // the resync, or a watch to start again
		case ev.Document.Meta.Key != key || ev.Revision <= seen:
			continue // another document, or a change already judged
		case ev.Type == store.Deleted:
			return false, nil // gone, or created anew: read again
		}
		seen = ev.Revision
		if ok, err := judge(ev.Document, true); ok || err != nil {
			return ok, err
		}
	}
}
