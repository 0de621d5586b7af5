package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// errCacheBehind is the cause of a read that waited too long for the cache
// to show the driver's own last write.
var errCacheBehind = errors.New("driver: the cache has not caught up with the driver's last write")

// cached is the cache a driver reads, and its read-your-writes gate.
type cached struct {
	cache *informer.Informer         // Config.Cache's informer of the kind; nil: the driver reads the store
	ryw   *expectations.Gate[string] // fed by cache's revisions; nil without a cache
}

// useCache makes the driver read its documents from f's informer of its
// kind, behind a read-your-writes gate fed by that informer's revisions.
// New calls it once, before the driver is used.
func (d *phaseDriver[Spec, Status, S, P]) useCache(f *informer.Factory) {
	inf, err := f.For(d.c.Kind())
	if err != nil {
		return // the collection's kind is valid, so For cannot fail; if it did, the driver would read the store
	}
	d.ryw = &expectations.Gate[string]{}
	inf.ObserveRevisions(d.ryw.Observed)
	d.echoes.Gate = d.ryw
	d.cache = inf
}

// read returns the document under key. With a cache that has listed and
// fresh unset, it reads the cache once the cache shows the driver's last write to key
// (waiting at most WaitInterval, then failing to be retried with backoff);
// otherwise it reads the store. A document that is not there is an error
// matching store.ErrNotFound. cached reports whether obj came from the cache.
func (d *phaseDriver[Spec, Status, S, P]) read(ctx context.Context, key string, fresh bool) (_ *store.Object[Spec, Status], cached bool, _ error) {
	inf := d.cache
	if inf == nil || fresh || !inf.HasSynced() {
		// A cache that has not listed yet, or does not run (a driver
		// reconciled outside any run, as a test does), is not read: the
		// driver's own source queues keys only once it has listed.
		obj, err := d.c.Get(ctx, key)
		return obj, false, err
	}
	if !d.ryw.Ready(key) {
		// The cache lags behind the driver's last write: wait, but not
		// for ever.
		wait, cancel := context.WithTimeoutCause(ctx, d.wait, errCacheBehind)
		err := d.ryw.Wait(wait, key)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			return nil, false, fmt.Errorf("%s %q: %w", d.c.Kind(), key, errCacheBehind)
		}
	}
	doc, ok := inf.Get(key)
	if !ok {
		return nil, false, &store.Error{Op: "get", Kind: d.c.Kind(), Key: key, Err: store.ErrNotFound}
	}
	// The cache's document is shared: the reconcile gets a copy of its own.
	obj, err := d.c.Decode(doc.Clone())
	return obj, true, err
}

// confirm checks, before a step runs on obj read from the cache, that the
// store holds obj's revision: a cache that has not seen another replica's
// last write (one that led before this one, or a write during a
// partition) would run the step on a status that is no longer stored, and
// its outcome could not be recorded over the newer one. A different
// revision is a conflict: the reconcile reads the store and decides again.
func (d *phaseDriver[Spec, Status, S, P]) confirm(ctx context.Context, obj *store.Object[Spec, Status]) error {
	doc, err := d.c.Backend().Get(ctx, d.c.Kind(), obj.Key)
	if err != nil {
		return err
	}
	if doc.Meta.Revision != obj.Revision {
		return &store.Error{Op: "get", Kind: d.c.Kind(), Key: obj.Key,
			Err: fmt.Errorf("%w: the cache is behind the store (revision %d, stored %d)", store.ErrConflict, obj.Revision, doc.Meta.Revision)}
	}
	return nil
}
