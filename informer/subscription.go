package informer

import (
	"context"
	"sync"

	"github.com/tendhq/tend/store"
)

// Event is one change of the cache, delivered to every subscriber.
type Event struct {
	// Type is Added for a document the cache did not hold, Modified for one
	// it held, Deleted for one it dropped.
	Type store.EventType
	// Revision is the store revision of the change; for a deletion found by
	// a list after the history was compacted, the list's revision.
	Revision int64
	// Document is the document after the change; for Deleted, its last
	// state as the store reported it (or as the cache held it, for a
	// deletion found by a list). Shared: it must not be changed.
	Document *store.Document
	// Old is the document as the cache held it before the change; nil for
	// Added. Shared: it must not be changed.
	Old *store.Document
}

// Subscription is one subscriber's queue of the informer's changes. The
// informer never waits for a subscriber: each subscription queues the
// changes it has not taken yet without bound, so a slow subscriber delays
// only itself. Close it when done.
type Subscription struct {
	inf *Informer

	mu     sync.Mutex    // guards the fields below
	queue  []Event       // changes not taken yet, oldest first
	wake   chan struct{} // closed, and set to nil, when queue grows or err is set; nil while nobody waits
	err    error         // ErrClosed after Close, or the error Run stopped on
	closed bool
}

// Subscribe registers a subscription and returns it with the documents the
// cache held at that moment, in key order: the subscription delivers every
// change made after them, in revision order. Before the informer has synced
// the snapshot is empty and the first list's documents arrive as Added
// events. The documents are shared: see [Informer.Get].
func (i *Informer) Subscribe() (*Subscription, []store.Document) {
	s := &Subscription{inf: i}
	i.mu.Lock()
	defer i.mu.Unlock()
	docs := i.cache.all()
	snap := make([]store.Document, len(docs))
	for k, d := range docs {
		snap[k] = *d
	}
	if i.failed != nil {
		s.err = i.failed
	}
	i.subs[s] = struct{}{}
	return s, snap
}

func (s *Subscription) push(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.queue = append(s.queue, e)
	s.wakeLocked()
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.err = err
		s.wakeLocked()
	}
}

func (s *Subscription) wakeLocked() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// Next returns the oldest change not taken yet, waiting for one if needed.
// It returns ctx.Err() if ctx ends first (the subscription stays usable),
// [ErrClosed] after Close, and, once the queue is empty, the error
// [Informer.Run] stopped on if it failed.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return Event{}, ErrClosed
		}
		if len(s.queue) > 0 {
			e := s.queue[0]
			s.queue[0] = Event{}
			s.queue = s.queue[1:]
			if len(s.queue) == 0 {
				s.queue = nil // let the backing array go
			}
			s.mu.Unlock()
			return e, nil
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return Event{}, err
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-wake:
		}
	}
}

// Len returns how many changes wait to be taken.
func (s *Subscription) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Close ends the subscription and drops what it still queued. It is safe
// to call more than once.
func (s *Subscription) Close() {
	s.inf.mu.Lock()
	delete(s.inf.subs, s)
	s.inf.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.queue = true, nil
	s.wakeLocked()
}

// Handler handles the changes of an informer. See [Informer.Handle].
type Handler interface {
	Handle(e Event)
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(e Event)

// Handle calls f(e).
func (f HandlerFunc) Handle(e Event) { f(e) }

// Handle subscribes h and calls it, from the calling goroutine, first with
// an Added event for each document in the cache (in key order), then with
// every later change, until ctx ends; it then unsubscribes and returns nil.
// If [Informer.Run] fails, Handle returns its error once h has handled every
// change before the failure. h has its own queue: a slow h never delays the
// informer or another handler.
func (i *Informer) Handle(ctx context.Context, h Handler) error {
	s, snap := i.Subscribe()
	defer s.Close()
	for k := range snap {
		if ctx.Err() != nil {
			return nil
		}
		h.Handle(Event{Type: store.Added, Revision: snap[k].Meta.Revision, Document: &snap[k]})
	}
	for {
		e, err := s.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		h.Handle(e)
	}
}
