package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/informer"
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
	// EnqueueTrigger queues key at priority (0, or [LowPriority]) and says
	// why: t joins the triggers of the key's next reconcile
	// ([TriggersFrom]) and is logged at debug level. A zero t queues the
	// key like Enqueue. The package's sources queue every key this way.
	EnqueueTrigger(key string, t Trigger, priority int)
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
				e.EnqueueTrigger(key, Trigger{Kind: TriggerChannel}, 0)
			}
		}
	})
}

// For returns a source that queues the key of every document of kind: each
// document of the informer's cache when it starts, then each document
// added, modified or deleted. lw is the cache to read, an
// *informer.Factory (which must run meanwhile; a Manager of package manager
// runs its own: Manager.Cache), or a store, over which the source runs an
// informer of its own while it runs. The informer lists and watches from
// the list's revision; when the store has compacted the history it needs
// (store.ErrCompacted), it lists again and reports what changed meanwhile;
// when the watch fails otherwise it watches again from the last revision
// received, missing nothing. store.ErrUnknownKind, store.ErrInvalid and
// store.ErrClosed stop the controller.
func For(lw informer.ListWatcher, kind string) Source {
	return newWatchSource(lw, kind, kind, func(e Enqueuer, ev *Event) {
		e.EnqueueTrigger(ev.Doc.Meta.Key, ev.Trigger, 0)
	})
}

// Owns returns a source that watches the documents of kind, as [For] does,
// and for each one queues the key of its controlling owner: the owner
// reference with Controller set whose Kind is ownerKind. A dependent
// without such an owner queues nothing. An owner reference removed by an
// update is not reported to the former owner.
func Owns(lw informer.ListWatcher, kind, ownerKind string) Source {
	return newWatchSource(lw, kind, kind+" owned by "+ownerKind, func(e Enqueuer, ev *Event) {
		for _, o := range ev.Doc.Meta.Owners {
			if o.Controller && o.Kind == ownerKind {
				e.EnqueueTrigger(o.Key, Trigger{Kind: TriggerOwned, ObjectKind: kind, ObjectKey: ev.Doc.Meta.Key}, 0)
				return
			}
		}
	})
}

// Watches returns a source that watches the documents of kind, as [For]
// does, and queues the keys keys(doc) returns for each one. keys is called
// from one goroutine at a time and must not block.
func Watches(lw informer.ListWatcher, kind string, keys func(doc store.Document) []string) Source {
	return newWatchSource(lw, kind, kind+" watched", func(e Enqueuer, ev *Event) {
		t := Trigger{Kind: TriggerWatched, ObjectKind: kind, ObjectKey: ev.Doc.Meta.Key}
		for _, k := range keys(*ev.Doc) {
			e.EnqueueTrigger(k, t, 0)
		}
	})
}

// Event is a change of a document as a watching source reports it to the
// function given to [Events].
type Event struct {
	// Doc is the document as the change left it (as it was last, for a
	// deletion). It must not be modified.
	Doc *store.Document
	// Old is the document as it was before the change; nil for a document
	// new to the source, and for a listed one. It must not be modified.
	Old *store.Document
	// Listed is set for each document of a list: the one a source makes when
	// it starts, when its watch had to start over, or when the replica
	// gained keys. A listed document's change may have been seen already.
	Listed bool
	// Reason says what happened, for logs: "<kind> listed", "<kind> added",
	// "<kind> modified" or "<kind> deleted".
	Reason string
	// Trigger is what the change is to the document's own key: listed, a
	// new generation ([TriggerSpec]), a deletion requested or done
	// ([TriggerDelete]), or another change ([TriggerChange]).
	Trigger Trigger
}

// Events returns a source that watches the documents of kind, as [For]
// does, and calls handle for each change, which queues what the change
// calls for through e. handle is called from one goroutine at a time and
// must not block.
func Events(lw informer.ListWatcher, kind string, handle func(e Enqueuer, ev Event)) Source {
	return newWatchSource(lw, kind, kind, func(e Enqueuer, ev *Event) { handle(e, *ev) })
}

// watchSource subscribes to the informer of one kind and maps each document
// to keys.
type watchSource struct {
	lw   informer.ListWatcher
	kind string
	// emit queues what a document's change calls for.
	emit func(e Enqueuer, ev *Event)
	// reasons holds the debug reason per event type; index 0 is "listed".
	reasons [4]string
	// current is the informer of the run in progress; nil when not running.
	current atomic.Pointer[informer.Informer]
}

func newWatchSource(lw informer.ListWatcher, kind, what string, emit func(Enqueuer, *Event)) *watchSource {
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
		return fmt.Errorf("%w: watch source needs an informer.ListWatcher and a kind", ErrInvalidConfig)
	}
	lw := s.lw
	var inf *informer.Informer
	var err error
	if f, ok := lw.(*informer.Factory); ok {
		inf, err = f.For(s.kind)
	} else if inf, err = informer.New(lw, s.kind, informer.Config{}); err == nil {
		// An informer of this source's own, for as long as it runs.
		ctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer stop()
		wg.Go(func() { _ = inf.Run(ctx) }) // its error reaches WaitForSync and the subscription
	}
	if err != nil {
		return fmt.Errorf("controller: watching %s: %w", s.kind, err)
	}
	if err := inf.WaitForSync(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("controller: listing %s: %w", s.kind, err)
	}
	sub, docs := inf.Subscribe()
	defer sub.Close()
	s.current.Store(inf)
	defer s.current.CompareAndSwap(inf, nil)
	s.list(e, docs)
	if h, ok := e.(*runner); ok {
		h.health.synced(s)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller: watching %s: %w", s.kind, err)
		}
		s.emit(e, &Event{Doc: ev.Document, Old: ev.Old, Reason: s.reasons[ev.Type],
			Trigger: eventTrigger(ev.Type, ev.Document, ev.Old, false)})
	}
}

// list emits each document of a list.
func (s *watchSource) list(e Enqueuer, docs []store.Document) {
	for i := range docs {
		s.emit(e, &Event{Doc: &docs[i], Listed: true, Reason: s.reasons[0], Trigger: Trigger{Kind: TriggerListed}})
	}
}

// relist queues again the keys of every document of the kind, read from
// the informer's cache while the source runs, else from the store.
func (s *watchSource) relist(ctx context.Context, e Enqueuer) error {
	var docs []store.Document
	if inf := s.current.Load(); inf != nil {
		var err error
		if docs, _, err = inf.List(store.ListOptions{}); err != nil {
			return err
		}
	} else {
		r, err := s.lw.List(ctx, s.kind, store.ListOptions{})
		if err != nil {
			return err
		}
		docs = r.Items
	}
	s.list(e, docs)
	return nil
}

// Resync returns a source that lists the documents of kind every period
// (from the cache when lw is an informer.Factory, else from the store) and
// queues each key at [LowPriority], so a periodic
// check of every document never delays keys queued by changes. The first list happens one period
// after the start. Failures are retried at the next period;
// store.ErrUnknownKind, store.ErrInvalid and store.ErrClosed stop the
// controller.
func Resync(lw informer.ListWatcher, kind string, every time.Duration) Source {
	return &resyncSource{lw: lw, kind: kind, every: every}
}

type resyncSource struct {
	lw    informer.ListWatcher
	kind  string
	every time.Duration
}

// Start implements [Source].
func (s *resyncSource) Start(ctx context.Context, e Enqueuer) error {
	if s.lw == nil || s.kind == "" || s.every <= 0 {
		return fmt.Errorf("%w: Resync needs an informer.ListWatcher, a kind and a positive period", ErrInvalidConfig)
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.relist(ctx, e); err != nil && ctx.Err() == nil && informer.Permanent(err) {
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
		e.EnqueueTrigger(r.Items[i].Meta.Key, Trigger{Kind: TriggerResync}, LowPriority)
	}
	return nil
}
