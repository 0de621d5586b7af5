package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Watch watches kind's custom resources from resourceVersion fromRevision.
// A watch the API server ends (it does so after its request timeout) is
// resumed from the last revision received; a resourceVersion the server no
// longer holds ("410 Gone") fails with [store.ErrCompacted]. Watching from
// revision 0 asks for the whole history, which the API server has usually
// compacted. A resourceVersion the API server has not reached yet is waited
// for, with its watch cache or without: the server sends only later
// changes, and the store drops any at or before the revision it has
// delivered up to.
func (s *Store) Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error) {
	const op = "watch"
	if err := s.checkKind(ctx, op, kind, "", false); err != nil {
		return nil, err
	}
	if err := backend.CheckWatch(kind, fromRevision); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &kindWatch{s: s, kind: kind, ctx: wctx, cancel: cancel, last: fromRevision}
	if err := w.open(ctx); err != nil {
		cancel()
		return nil, err
	}
	return w, nil
}

// kindWatch adapts the API's watch streams to the pull-based [store.Watch].
// Next is called by one goroutine at a time; Close from any.
type kindWatch struct {
	s      *Store
	kind   string
	ctx    context.Context // lives until Close
	cancel context.CancelFunc

	// Owned by Next.
	last int64 // revision of the last change received
	err  error // the failure every later Next returns

	mu  sync.Mutex      // guards cur
	cur watch.Interface // the open stream, nil between streams
}

// open starts a stream from w.last. ctx bounds the call only.
func (w *kindWatch) open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	from := max(w.last, 1) // resourceVersion "0" would mean "from any state", not "from the start"
	st, err := w.s.resource(w.kind).Watch(w.ctx, metav1.ListOptions{ResourceVersion: formatRevision(from)})
	if err != nil {
		if w.ctx.Err() != nil {
			return &store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed}
		}
		return w.s.fail("watch", w.kind, "", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		st.Stop()
		return &store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed}
	}
	w.cur = st
	return nil
}

// Next returns the next change to a document of the kind.
func (w *kindWatch) Next(ctx context.Context) (store.Event, error) {
	for {
		if w.err != nil {
			return store.Event{}, w.err
		}
		if w.ctx.Err() != nil {
			w.err = &store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed}
			continue
		}
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		w.mu.Lock()
		cur := w.cur
		w.mu.Unlock()
		if cur == nil {
			if err := w.open(ctx); err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return store.Event{}, err
				}
				w.err = err
			}
			continue
		}
		var (
			e  watch.Event
			ok bool
		)
		select {
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		case <-w.ctx.Done():
			continue
		case e, ok = <-cur.ResultChan():
		}
		if !ok {
			// The server ended the stream; resume after the last change.
			w.mu.Lock()
			w.cur = nil
			w.mu.Unlock()
			cur.Stop()
			continue
		}
		ev, deliver, err := w.event(e)
		if err != nil {
			w.err = err
			continue
		}
		if deliver {
			return ev, nil
		}
	}
}

// event converts one event of the stream. It reports false for events the
// store does not deliver: bookmarks, objects the store did not write, and
// the last update of a document being removed, which a Deleted event follows.
func (w *kindWatch) event(e watch.Event) (store.Event, bool, error) {
	if e.Type == watch.Error {
		err := apierrors.FromObject(e.Object)
		if apierrors.IsInternalError(err) && strings.Contains(err.Error(), "PrevKv=nil") {
			// A watch that starts exactly at etcd's compaction point: etcd
			// accepts it, but the previous state of its first change, which
			// the API server needs, is gone. That is history lost too.
			return store.Event{}, false, &store.Error{Op: "watch", Kind: w.kind, Err: fmt.Errorf("%w: %w", store.ErrCompacted, err)}
		}
		return store.Event{}, false, w.s.fail("watch", w.kind, "", err)
	}
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return store.Event{}, false, &store.Error{Op: "watch", Kind: w.kind, Err: fmt.Errorf("unexpected object %T in a watch", e.Object)}
	}
	rev, err := parseRevision(u.GetResourceVersion())
	if err != nil {
		return store.Event{}, false, &store.Error{Op: "watch", Kind: w.kind, Err: err}
	}
	if rev <= w.last {
		return store.Event{}, false, nil
	}
	w.last = rev
	if e.Type == watch.Bookmark {
		return store.Event{}, false, nil
	}
	d, ok, err := w.s.document(w.kind, u)
	if err != nil {
		return store.Event{}, false, &store.Error{Op: "watch", Kind: w.kind, Key: u.GetName(), Err: err}
	}
	if !ok {
		return store.Event{}, false, nil
	}
	ev := store.Event{Revision: rev, Document: d}
	switch e.Type {
	case watch.Added:
		ev.Type = store.Added
	case watch.Modified:
		if removing(d) {
			return store.Event{}, false, nil
		}
		ev.Type = store.Modified
	case watch.Deleted:
		ev.Type = store.Deleted
	default:
		return store.Event{}, false, nil
	}
	return ev, true, nil
}

// Close stops the watch. It is safe to call more than once.
func (w *kindWatch) Close() error {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		w.cur.Stop()
		w.cur = nil
	}
	return nil
}
