package cacheread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// ErrBehind is the cause of a read that waited too long for the cache to
// show the driver's own last write.
var ErrBehind = errors.New("driver: the cache has not caught up with the driver's last write")

// Reader reads the documents of a collection, from a cache when it has
// one, behind a read-your-writes gate. It is safe for concurrent use.
type Reader[Spec, Status any] struct {
	c     *store.Collection[Spec, Status]
	cache *informer.Informer         // the informer of the collection's kind; nil: the store is read
	gate  *expectations.Gate[string] // fed by cache's revisions; nil without a cache
	wait  time.Duration
}

// New returns the reader of c's documents: from f's informer of c's kind,
// waiting at most wait for it to show the driver's last write to a key,
// or from the store when f is nil. It registers the gate with the informer.
func New[Spec, Status any](c *store.Collection[Spec, Status], f *informer.Factory, wait time.Duration) *Reader[Spec, Status] {
	r := &Reader[Spec, Status]{c: c, wait: wait}
	if f == nil {
		return r
	}
	inf, err := f.For(c.Kind())
	if err != nil {
		return r // the collection's kind is valid, so For cannot fail; if it did, the driver would read the store
	}
	r.gate = &expectations.Gate[string]{}
	inf.ObserveRevisions(r.gate.Observed)
	r.cache = inf
	return r
}

// Gate returns the read-your-writes gate the driver records its writes in,
// nil when r reads the store.
func (r *Reader[Spec, Status]) Gate() *expectations.Gate[string] { return r.gate }

// Read returns the document under key. With a cache that has listed and
// fresh unset, it reads the cache once the cache shows the driver's last write to key
// (waiting at most the reader's wait, then failing with an error matching
// [ErrBehind], to be retried with backoff); otherwise it reads the store. A
// document that is not there is an error matching store.ErrNotFound. cached
// reports whether obj came from the cache.
func (r *Reader[Spec, Status]) Read(ctx context.Context, key string, fresh bool) (_ *store.Object[Spec, Status], cached bool, _ error) {
	inf := r.cache
	if inf == nil || fresh || !inf.HasSynced() {
		// A cache that has not listed yet, or does not run (a driver
		// reconciled outside any run, as a test does), is not read: the
		// driver's own source queues keys only once it has listed.
		obj, err := r.c.Get(ctx, key)
		return obj, false, err
	}
	if !r.gate.Ready(key) {
		// The cache lags behind the driver's last write: wait, but not
		// for ever.
		wait, cancel := context.WithTimeoutCause(ctx, r.wait, ErrBehind)
		err := r.gate.Wait(wait, key)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			return nil, false, fmt.Errorf("%s %q: %w", r.c.Kind(), key, ErrBehind)
		}
	}
	doc, ok := inf.Get(key)
	if !ok {
		return nil, false, &store.Error{Op: "get", Kind: r.c.Kind(), Key: key, Err: store.ErrNotFound}
	}
	// The cache's document is shared: the reconcile gets a copy of its own.
	obj, err := r.c.Decode(doc.Clone())
	return obj, true, err
}

// Confirm checks, before a step runs on obj read from the cache, that the
// store holds obj's revision: a cache that has not seen another replica's
// last write (one that led before this one, or a write during a
// partition) would run the step on a status that is no longer stored, and
// its outcome could not be recorded over the newer one. A different
// revision is a conflict: the reconcile reads the store and decides again.
func (r *Reader[Spec, Status]) Confirm(ctx context.Context, obj *store.Object[Spec, Status]) error {
	doc, err := r.c.Backend().Get(ctx, r.c.Kind(), obj.Key)
	if err != nil {
		return err
	}
	if doc.Meta.Revision != obj.Revision {
		return &store.Error{Op: "get", Kind: r.c.Kind(), Key: obj.Key,
			Err: fmt.Errorf("%w: the cache is behind the store (revision %d, stored %d)", store.ErrConflict, obj.Revision, doc.Meta.Revision)}
	}
	return nil
}
