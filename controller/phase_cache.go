package controller

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
var errCacheBehind = errors.New("controller: the cache has not caught up with the driver's last write")

// useCache makes the driver read its documents from f's informer of its
// kind, behind a read-your-writes gate fed by that informer's revisions.
func (d *phaseDriver[Spec, Status, S, P]) useCache(f *informer.Factory) error {
	inf, err := f.For(d.c.Kind())
	if err != nil {
		return fmt.Errorf("%w: driver of %s: %w", ErrInvalidConfig, d.c.Kind(), err)
	}
	d.cache, d.factory = inf, f
	d.echoes.gate = &expectations.Gate[string]{}
	// The driver lives as long as the factory's informer: the hook is never
	// removed.
	inf.ObserveRevisions(d.echoes.gate.Observed)
	return nil
}

// listWatcher is what the driver's source watches.
func (d *phaseDriver[Spec, Status, S, P]) listWatcher() ListWatcher {
	if d.factory != nil {
		return d.factory
	}
	return d.c.Backend()
}

// read returns the document under key. With a cache and fresh unset, it
// reads the cache once the cache shows the driver's last write to key
// (waiting at most WaitInterval, then failing to be retried with backoff);
// otherwise it reads the store. A document that is not there is an error
// matching store.ErrNotFound.
func (d *phaseDriver[Spec, Status, S, P]) read(ctx context.Context, key string, fresh bool) (*store.Object[Spec, Status], error) {
	if d.cache == nil || fresh {
		return d.c.Get(ctx, key)
	}
	if err := d.cache.WaitForSync(ctx); err != nil {
		return nil, err
	}
	if d.defects&defectNoGate == 0 {
		wait, cancel := context.WithTimeoutCause(ctx, d.wait, errCacheBehind)
		err := d.echoes.gate.Wait(wait, key)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s %q: %w", d.c.Kind(), key, errCacheBehind)
		}
	}
	doc, ok := d.cache.Get(key)
	if !ok {
		return nil, &store.Error{Op: "get", Kind: d.c.Kind(), Key: key, Err: store.ErrNotFound}
	}
	// The cache's document is shared: the reconcile gets a copy of its own.
	return d.c.Decode(doc.Clone())
}
