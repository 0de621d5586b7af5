package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Watch returns every change to kind after fromRevision, from one etcd watch
// of the kind's document keys. The etcd client buffers what the consumer has
// not read and resumes from the last revision received when its connection
// breaks, so the watch never lags and never loses an event; it fails with
// [store.ErrCompacted] when etcd no longer holds the history it needs. etcd
// waits for a revision it has not reached yet, as [store.Watcher] requires.
//
// ctx bounds only the call: the watch lives until Close.
func (s *Store) Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error) {
	const op = "watch"
	if err := s.checkKind(ctx, op, kind, ""); err != nil {
		return nil, err
	}
	if err := backend.CheckWatch(kind, fromRevision); err != nil {
		return nil, err
	}
	if c := s.compacted.Load(); fromRevision < c {
		return nil, backend.Compacted(kind, fromRevision, c)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ch := s.cli.Watch(wctx, s.keys.docs(kind), clientv3.WithPrefix(), clientv3.WithRev(fromRevision+1), clientv3.WithPrevKV())
	return &watch{s: s, kind: kind, ch: ch, cancel: cancel, done: wctx.Done(), last: fromRevision}, nil
}

// watch adapts an etcd watch channel to the pull-based [store.Watch].
type watch struct {
	s      *Store
	kind   string
	ch     clientv3.WatchChan
	cancel context.CancelFunc
	done   <-chan struct{} // closed by Close

	// mu guards pending, last and err. It is never held while waiting on
	// the channel.
	mu      sync.Mutex
	pending []*clientv3.Event // events of the last response not yet delivered
	last    int64             // revision of the last event delivered
	err     error             // the failure every later Next returns
}

// Next returns the next change. Events of one etcd response are delivered
// one by one before the next response is read.
func (w *watch) Next(ctx context.Context) (store.Event, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		e, ok, err := w.take()
		if err != nil {
			return store.Event{}, err
		}
		if ok {
			return e, nil
		}
		select {
		case resp, open := <-w.ch:
			w.receive(resp, open)
		case <-w.done:
			w.fail(&store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed})
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
}

// take returns the next pending event, if any, or the watch's failure.
func (w *watch) take() (store.Event, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return store.Event{}, false, w.err
	}
	select {
	case <-w.done:
		w.err = &store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed}
		return store.Event{}, false, w.err
	default:
	}
	for len(w.pending) > 0 {
		ev := w.pending[0]
		w.pending[0] = nil
		w.pending = w.pending[1:]
		rev := ev.Kv.ModRevision
		if c := w.s.compacted.Load(); rev <= c {
			// Received from etcd before Store.Compact discarded it, but not
			// yet by the consumer: the watch is overtaken, as Compact
			// promises.
			w.err = backend.Compacted(w.kind, w.last, c)
			return store.Event{}, false, w.err
		}
		w.last = rev
		e, err := w.event(ev)
		if err != nil {
			return store.Event{}, false, err
		}
		return e, true, nil
	}
	return store.Event{}, false, nil
}

// receive takes in one response from the etcd watch channel.
func (w *watch) receive(resp clientv3.WatchResponse, open bool) {
	switch err := resp.Err(); {
	case !open:
		w.fail(&store.Error{Op: "watch", Kind: w.kind, Err: fmt.Errorf("%w: the etcd client closed the watch", store.ErrClosed)})
	case resp.CompactRevision != 0:
		w.fail(backend.Compacted(w.kind, w.lastRevision(), resp.CompactRevision-1))
	case errors.Is(err, rpctypes.ErrCompacted):
		w.fail(backend.Compacted(w.kind, w.lastRevision(), 0))
	case err != nil:
		// A watch etcd cancelled for another reason: start again from the
		// last revision received.
		w.fail(&store.Error{Op: "watch", Kind: w.kind,
			Err: fmt.Errorf("%w: etcd cancelled the watch (%w); watch again from revision %d", store.ErrWatchLagged, err, w.lastRevision())})
	default:
		w.mu.Lock()
		w.pending = append(w.pending, resp.Events...)
		w.mu.Unlock()
	}
}

func (w *watch) lastRevision() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// fail records the watch's failure unless it already has one.
func (w *watch) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// event turns an etcd event into a store event. A Deleted event carries the
// document as it was before the removal; when the removal came from its
// last finalizer going away, the finalizers are cleared and the revision is
// the removal's, as the document's last state.
func (w *watch) event(ev *clientv3.Event) (store.Event, error) {
	rev := ev.Kv.ModRevision
	if ev.Type == mvccpb.PUT {
		d, err := w.s.decode("watch", w.kind, ev.Kv)
		if err != nil {
			return store.Event{}, err
		}
		typ := store.Modified
		if ev.IsCreate() {
			typ = store.Added
		}
		return store.Event{Type: typ, Revision: rev, Document: d}, nil
	}
	if ev.PrevKv == nil {
		// etcd sends no previous value when it was compacted away.
		key := string(ev.Kv.Key[len(w.s.keys.docs(w.kind)):])
		return store.Event{Type: store.Deleted, Revision: rev, Document: store.Document{Meta: store.Meta{Kind: w.kind, Key: key}}}, nil
	}
	d, err := w.s.decode("watch", w.kind, ev.PrevKv)
	if err != nil {
		return store.Event{}, err
	}
	if len(d.Meta.Finalizers) > 0 {
		d.Meta.Finalizers = nil
		d.Meta.Revision = rev
	}
	return store.Event{Type: store.Deleted, Revision: rev, Document: d}, nil
}

// Close ends the watch; a Next waiting in another goroutine returns
// [store.ErrClosed].
func (w *watch) Close() error {
	w.cancel()
	return nil
}
