package controller

import (
	"context"
	"reflect"
	"sync"

	"github.com/tendhq/tend/informer"
)

// CacheUser is implemented by a [Source] or a [Reconciler] that reads the
// documents of a store from the process's shared cache: the watching
// sources ([Kind], [Owns], [Watches], [Resync]), a [Driver], and the
// garbage collector of package cascade.
//
// When a run begins, before any source starts, the [Manager] (or a
// [Controller] run alone) calls UseCache on each source and on the
// reconciler of each controller that implements it, with the
// informer.Factory over the store CacheStore names: one per store for the
// whole run, shared by every controller of the Manager, so the store sees
// one watch per kind however many controllers follow it. The factory runs
// while the run does; when the run ends UseCache is called again with nil.
// A controller whose [Config.Uncached] is set gets nil too.
type CacheUser interface {
	// CacheStore returns the store whose documents it reads, or nil when it
	// needs no shared cache (it reads nothing, or shares one of its own
	// choosing, such as a source given an informer.Factory).
	CacheStore() ListWatcher
	// UseCache gives it the factory over CacheStore() to read from, or nil:
	// it then reads the store itself (a source runs an informer of its own).
	UseCache(f *informer.Factory)
}

// caches holds the informer factories one run shares among its
// controllers: one per store.
type caches struct {
	given *informer.Factory   // ManagerConfig.Informers; nil when none
	made  []*informer.Factory // made for the run, over the stores the controllers read
}

// factoryFor returns the factory over lw: the given one when it lists and
// watches lw, else one made for the run. A store that cannot be compared
// (a ListWatcher of a non-comparable type) gets none.
func (cs *caches) factoryFor(lw ListWatcher) *informer.Factory {
	if lw == nil || !reflect.TypeOf(lw).Comparable() {
		return nil
	}
	if cs.given != nil && sameStore(cs.given.ListWatcher(), lw) {
		return cs.given
	}
	for _, f := range cs.made {
		if sameStore(f.ListWatcher(), lw) {
			return f
		}
	}
	f, err := informer.NewFactory(lw, informer.FactoryConfig{})
	if err != nil {
		return nil
	}
	cs.made = append(cs.made, f)
	return f
}

// sameStore reports whether a and b are the same store; b's type is
// comparable. A comparable type can still hold an interface whose value is
// not: such a store is never the same as another.
func sameStore(a, b ListWatcher) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// bind gives the sources and the reconciler of c that use a cache their
// factory; with cs nil, or for an uncached controller, none.
func (cs *caches) bind(c *Controller) {
	for _, u := range c.cacheUsers() {
		var f *informer.Factory
		if cs != nil && !c.uncached {
			f = cs.factoryFor(u.CacheStore())
		}
		u.UseCache(f)
	}
}

// cacheUsers returns the sources and the reconciler of c that implement
// [CacheUser].
func (c *Controller) cacheUsers() []CacheUser {
	var out []CacheUser
	for _, s := range c.sources {
		if u, ok := s.(CacheUser); ok {
			out = append(out, u)
		}
	}
	if u, ok := c.rec.(CacheUser); ok {
		out = append(out, u)
	}
	return out
}

// run runs every factory of cs (the given one too, when runGiven) until
// the returned func is called, which returns once they all stopped. An
// informer's failure reaches the sources that subscribe to it, which stop
// their controllers: it is reported there.
func (cs *caches) run(ctx context.Context, runGiven bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	fs := cs.made
	if runGiven && cs.given != nil {
		fs = append([]*informer.Factory{cs.given}, fs...)
	}
	for _, f := range fs {
		wg.Go(func() { _ = f.Run(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
