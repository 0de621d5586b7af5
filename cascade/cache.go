package cascade

import (
	"context"
	"errors"

	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// pass is one pass of a reconcile over what it reads. A pass over the
// shared cache finds the work to do, and finds most reconciles to have none
// (a dependent whose owners are all there) without a read of the store; it
// makes no write: the first write it would make stops it with
// errNeedsStore, and the reconcile runs again over the store. So every
// write is decided on the store's reads, as without a cache, and the
// cache's lag costs at most a pass over the store for nothing. A cache
// that misses a change the store already has (a lagging cache) can make
// the pass find nothing to do, but the change reaches the cache before
// the event that reports it queues the keys it concerns, and their
// reconciles then see it.
type pass struct {
	*reconciler
	cache map[string]*informer.Informer // by watched kind; nil: the pass reads the store
}

// errNeedsStore stops a pass over the cache that found a write to make.
var errNeedsStore = errors.New("cascade: a write to decide on the store's reads")

// mayWrite returns errNeedsStore in a pass over the cache, nil otherwise.
func (p *pass) mayWrite() error {
	if p.cache != nil {
		return errNeedsStore
	}
	return nil
}

// informer returns the synced informer of kind that the pass reads, or nil
// when it reads the store for kind.
func (p *pass) informer(kind string) *informer.Informer {
	if inf := p.cache[kind]; inf != nil && inf.HasSynced() {
		return inf
	}
	return nil
}

// get reads the document kind/key. A document read from the cache is
// shared: it must not be changed.
func (p *pass) get(ctx context.Context, kind, key string) (store.Document, error) {
	inf := p.informer(kind)
	if inf == nil {
		return p.b.Get(ctx, kind, key)
	}
	if d, ok := inf.Get(key); ok {
		return d, nil
	}
	return store.Document{}, &store.Error{Op: "get", Kind: kind, Key: key, Err: store.ErrNotFound}
}

// list reads the documents of kind opts selects. Documents read from the
// cache are shared: they must not be changed.
func (p *pass) list(ctx context.Context, kind string, opts store.ListOptions) ([]store.Document, error) {
	inf := p.informer(kind)
	if inf == nil {
		res, err := p.b.List(ctx, kind, opts)
		return res.Items, err
	}
	docs, _, err := inf.List(opts)
	return docs, err
}

// useCache makes the reconciler read the informers of f first.
func (r *reconciler) useCache(f *informer.Factory) {
	r.cache = make(map[string]*informer.Informer, len(r.kinds))
	for _, k := range r.kinds {
		if inf, err := f.For(k); err == nil {
			r.cache[k] = inf
		}
	}
}

// cached returns the pass over the cache, or over the store when the
// reconciler has no cache.
func (r *reconciler) cached() *pass {
	return &pass{reconciler: r, cache: r.cache}
}
