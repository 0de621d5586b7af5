package controller

import (
	"github.com/tendhq/tend/informer"
)

// CacheUser is implemented by a [Source] or a [Reconciler] that reads the
// documents of a store from the process's shared cache: the watching
// sources ([For], [Owns], [Watches], [Resync]), a [Driver], and the
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
	CacheStore() informer.ListWatcher
	// UseCache gives it the factory over CacheStore() to read from, or nil:
	// it then reads the store itself (a source runs an informer of its own).
	UseCache(f *informer.Factory)
}

// CacheUsers returns the sources and the reconciler of c that read a store
// through a cache ([CacheUser]), for a manager that shares one cache among
// its controllers; none when c is [Config.Uncached].
func (c *Controller) CacheUsers() []CacheUser {
	if c.uncached {
		return nil
	}
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
