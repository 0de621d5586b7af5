package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/store"
)

// LowPriority is the work-queue priority of keys queued with
// [Enqueuer.EnqueueLow]: they wait behind keys queued with
// [Enqueuer.Enqueue], but aging (see workqueue.Config.PriorityAging) keeps
// them from waiting forever.
const LowPriority = -1

// Enqueuer is how a [Source] asks for keys to be reconciled. Its methods are
// safe for concurrent use and never block on reconciles.
type Enqueuer interface {
	// Enqueue queues key. reason says why, for the controller's debug log;
	// it never reaches the [Reconciler].
	Enqueue(key, reason string)
	// EnqueueLow queues key at [LowPriority].
	EnqueueLow(key, reason string)
}

// Source queues keys for a controller. [Controller.Run] starts each source of
// [Config.Sources] in its own goroutine.
type Source interface {
	// Start queues keys through e until ctx ends, then returns nil. It may
	// return earlier: nil when it has nothing more to queue (a closed
	// channel), or an error when it cannot go on, which stops the
	// controller. Transient failures are retried inside Start.
	Start(ctx context.Context, e Enqueuer) error
}

// SourceFunc adapts a function to a [Source].
type SourceFunc func(ctx context.Context, e Enqueuer) error

// Start calls f(ctx, e).
func (f SourceFunc) Start(ctx context.Context, e Enqueuer) error { return f(ctx, e) }

// relister is a source that can list everything it would queue. A sharding
// [Manager] asks it to queue its keys again when the replica gains shards.
type relister interface {
	relist(ctx context.Context, e Enqueuer) error
}

// Channel returns a source that queues each key received from ch, until ch
// is closed or the controller stops.
func Channel(ch <-chan string) Source {
	return SourceFunc(func(ctx context.Context, e Enqueuer) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case key, ok := <-ch:
				if !ok {
					return nil
				}
				e.Enqueue(key, "channel")
			}
		}
	})
}

// ListWatcher is the part of a store a watching source needs: a
// store.Backend, or a cache in front of one.
type ListWatcher interface {
	// List is store.Reader.List.
	List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error)
	// Watch is store.Watcher.Watch.
	Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error)
}

// Kind returns a source that queues the key of every document of kind: each
// listed document when it starts, then each document added, modified or
// deleted. It lists and watches from the list's revision; when the store has
// compacted the history it needs (store.ErrCompacted), it lists again and
// queues every key; when the watch fell behind (store.ErrWatchLagged), it
// watches again from the last revision received, missing nothing. Other
// failures are retried with backoff; store.ErrUnknownKind, store.ErrInvalid
// and store.ErrClosed stop the controller.
//
// A document deleted while the history was compacted is not reported: pair a
// controller that must see every removal with finalizers or [Resync].
func Kind(lw ListWatcher, kind string) Source {
	return newWatchSource(lw, kind, kind, func(e Enqueuer, doc *store.Document, _ bool, reason string) {
		e.Enqueue(doc.Meta.Key, reason)
	})
}

// Owns returns a source that watches the documents of kind, as [Kind] does,
// and for each one queues the key of its controlling owner: the owner
// reference with Controller set whose Kind is ownerKind. A dependent
// without such an owner queues nothing. An owner reference removed by an
// update is not reported to the former owner.
func Owns(lw ListWatcher, kind, ownerKind string) Source {
	return newWatchSource(lw, kind, kind+" owned by "+ownerKind, func(e Enqueuer, doc *store.Document, _ bool, reason string) {
		for _, o := range doc.Meta.Owners {
			if o.Controller && o.Kind == ownerKind {
				e.Enqueue(o.Key, reason)
				return
			}
		}
	})
}

// Watches returns a source that watches the documents of kind, as [Kind]
// does, and queues the keys keys(doc) returns for each one. keys is called
// from one goroutine at a time and must not block.
func Watches(lw ListWatcher, kind string, keys func(doc store.Document) []string) Source {
	return newWatchSource(lw, kind, kind+" watched", func(e Enqueuer, doc *store.Document, _ bool, reason string) {
		for _, k := range keys(*doc) {
			e.Enqueue(k, reason)
		}
	})
}

// watchSource lists then watches one kind and maps each document to keys.
type watchSource struct {
	lw   ListWatcher
	kind string
	// emit queues what doc's change calls for; listed is set for the
	// documents of a list, which a watch did not report as changes.
	emit func(e Enqueuer, doc *store.Document, listed bool, reason string)
	// reasons holds the debug reason per event type; index 0 is "listed".
	reasons [4]string
}

func newWatchSource(lw ListWatcher, kind, what string, emit func(Enqueuer, *store.Document, bool, string)) *watchSource {
	return &watchSource{
		lw:   lw,
		kind: kind,
		emit: emit,
		reasons: [4]string{
			what + " listed",
			what + " " + store.Added.String(),
			what + " " + store.Modified.String(),
			what + " " + store.Deleted.String(),
		},
	}
}

// Start implements [Source].
func (s *watchSource) Start(ctx context.Context, e Enqueuer) error {
	if s.lw == nil || s.kind == "" {
		return fmt.Errorf("%w: watch source needs a ListWatcher and a kind", ErrInvalidConfig)
	}
	var b backoff
	rev, listed := int64(0), false
	for {
		if !listed {
			r, err := s.list(ctx, e)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if fatal(err) {
					return fmt.Errorf("controller: listing %s: %w", s.kind, err)
				}
				if !b.wait(ctx) {
					return nil
				}
				continue
			}
			rev, listed = r, true
			if h, ok := e.(*runner); ok {
				h.health.synced(s)
			}
		}
		w, err := s.lw.Watch(ctx, s.kind, rev)
		if err == nil {
			rev, err = s.follow(ctx, w, e, rev, &b)
			_ = w.Close()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrCompacted):
			listed = false
		case errors.Is(err, store.ErrWatchLagged):
			// Watch again from rev, at once.
		case fatal(err):
			return fmt.Errorf("controller: watching %s: %w", s.kind, err)
		default:
			if !b.wait(ctx) {
				return nil
			}
		}
	}
}

// follow queues the keys of each event of w until it fails, and returns the
// revision of the last event received.
func (s *watchSource) follow(ctx context.Context, w store.Watch, e Enqueuer, rev int64, b *backoff) (int64, error) {
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return rev, err
		}
		b.reset()
		rev = ev.Revision
		reason := s.reasons[0]
		if ev.Type >= store.Added && ev.Type <= store.Deleted {
			reason = s.reasons[ev.Type]
		}
		s.emit(e, &ev.Document, false, reason)
	}
}

// list queues the keys of every document of the kind and returns the
// revision of the list.
func (s *watchSource) list(ctx context.Context, e Enqueuer) (int64, error) {
	r, err := s.lw.List(ctx, s.kind, store.ListOptions{})
	if err != nil {
		return 0, err
	}
	for i := range r.Items {
		s.emit(e, &r.Items[i], true, s.reasons[0])
	}
	return r.Revision, nil
}

func (s *watchSource) relist(ctx context.Context, e Enqueuer) error {
	_, err := s.list(ctx, e)
	return err
}

// Resync returns a source that lists the documents of kind every period and
// queues each key at [LowPriority], so a periodic check of every document
// never delays keys queued by changes. The first list happens one period
// after the start. Failures are retried at the next period;
// store.ErrUnknownKind, store.ErrInvalid and store.ErrClosed stop the
// controller.
func Resync(lw ListWatcher, kind string, every time.Duration) Source {
	return &resyncSource{lw: lw, kind: kind, every: every, reason: kind + " resync"}
}

type resyncSource struct {
	lw     ListWatcher
	kind   string
	every  time.Duration
	reason string
}

// Start implements [Source].
func (s *resyncSource) Start(ctx context.Context, e Enqueuer) error {
	if s.lw == nil || s.kind == "" || s.every <= 0 {
		return fmt.Errorf("%w: Resync needs a ListWatcher, a kind and a positive period", ErrInvalidConfig)
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.relist(ctx, e); err != nil && ctx.Err() == nil && fatal(err) {
			return fmt.Errorf("controller: resync of %s: %w", s.kind, err)
		}
	}
}

func (s *resyncSource) relist(ctx context.Context, e Enqueuer) error {
	r, err := s.lw.List(ctx, s.kind, store.ListOptions{})
	if err != nil {
		return err
	}
	for i := range r.Items {
		e.EnqueueLow(r.Items[i].Meta.Key, s.reason)
	}
	return nil
}

// fatal reports whether a store error cannot go away by retrying.
func fatal(err error) bool {
	return errors.Is(err, store.ErrUnknownKind) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrClosed)
}

// backoff spaces the retries of a failing source: 100 ms, doubling up to 30 s.
type backoff struct{ next time.Duration }

const (
	backoffBase = 100 * time.Millisecond
	backoffMax  = 30 * time.Second
)

// wait sleeps for the next delay; it returns false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := max(b.next, backoffBase)
	b.next = min(2*d, backoffMax)
	return sleep(ctx, d)
}

func (b *backoff) reset() { b.next = 0 }

// sleep waits for d; it returns false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
