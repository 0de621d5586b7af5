package expectations

import (
	"context"
	"sync"
)

// Gate makes a reconciler that reads from a cache see its own writes. After each successful write the reconciler
// records the revision the store returned with [Gate.Wrote]; the cache reports its progress with [Gate.Observed] (or
// [Gate.ObservedKey]); before reading key again the reconciler calls [Gate.Wait], which returns once the cache has
// observed that revision. Without it a reconciler that runs again before the watch delivers its own write acts on a
// stale view: it repeats a creation, or fails a revision precondition and retries for nothing.
//
// Revisions are the store's: int64, growing with every write. One Gate serves one cache fed by one watch stream in
// revision order, so that having observed revision r means having observed every write up to r.
//
// A key is released, and its entry removed, when the cache observes its revision, when the key is forgotten, or by
// an amortised sweep, so memory stays proportional to the writes the cache has not caught up with.
//
// The zero Gate is ready to use and has observed nothing (revision 0). A Gate is safe for concurrent use and must not
// be copied after first use. It starts no goroutines.
type Gate[K comparable] struct {
	mu       sync.Mutex // guards wrote, observed, wake and sweep
	wrote    map[K]int64
	observed int64
	// wake is closed, and set to nil, whenever a waiting key may have been released; nil while nobody waits.
	wake  chan struct{}
	sweep sweeper
}

// Wrote records that the reconciler wrote key at revision rev. A lower revision than one already recorded for key
// changes nothing.
func (g *Gate[K]) Wrote(key K, rev int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rev <= g.observed || rev <= g.wrote[key] {
		return
	}
	if g.wrote == nil {
		g.wrote = make(map[K]int64)
	}
	g.wrote[key] = rev
	sweep(&g.sweep, g.wrote, func(_ K, r int64) bool { return r <= g.observed })
}

// Observed records that the cache has observed every change up to and including revision rev, for example after
// applying a watch event or after a relist read at rev. Revisions at or below the current one change nothing.
func (g *Gate[K]) Observed(rev int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rev <= g.observed {
		return
	}
	g.observed = rev
	g.wakeLocked()
}

// ObservedKey records that the cache has observed key at revision rev, without claiming anything about other keys.
// It suits caches that track progress per document rather than per stream.
func (g *Gate[K]) ObservedKey(key K, rev int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, ok := g.wrote[key]; ok && r <= rev {
		delete(g.wrote, key)
		g.wakeLocked()
	}
}

// Forget releases key without waiting for the cache, for example when the reconciler learned that its write was
// superseded by a deletion.
func (g *Gate[K]) Forget(key K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.wrote[key]; ok {
		delete(g.wrote, key)
		g.wakeLocked()
	}
}

// Ready reports whether the cache has caught up with the last write recorded for key; true if none was recorded.
func (g *Gate[K]) Ready(key K) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readyLocked(key)
}

// Wait blocks until the cache has caught up with the last write recorded for key, and returns nil; at once if it
// already has or if no write was recorded. If ctx ends first, Wait returns ctx.Err().
func (g *Gate[K]) Wait(ctx context.Context, key K) error {
	for {
		g.mu.Lock()
		if g.readyLocked(key) {
			g.mu.Unlock()
			return nil
		}
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		wake := g.wake
		g.mu.Unlock()

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Len returns the number of keys held, including released ones not yet removed.
func (g *Gate[K]) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.wrote)
}

// readyLocked reports whether key is released, removing its entry if the cache caught up.
func (g *Gate[K]) readyLocked(key K) bool {
	r, ok := g.wrote[key]
	if !ok {
		return true
	}
	if r <= g.observed {
		delete(g.wrote, key)
		return true
	}
	return false
}

// wakeLocked wakes every waiter to check its key again.
func (g *Gate[K]) wakeLocked() {
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
}
