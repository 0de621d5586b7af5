package controller

import (
	"sync"
	"time"
)

// HasSynced reports whether the controller runs and each of its sources that
// lists ([For], [Owns], [Watches]) has queued the keys of its first list,
// as client-go's informers' HasSynced does. Other sources ([Channel],
// [Resync], a [SourceFunc]) have nothing to list and count as synced from
// the start. It turns false again when the controller stops.
func (c *Controller) HasSynced() bool {
	h := c.current.Load()
	return h != nil && h.hasSynced()
}

// runHealth is what the health checks read of one run of a controller: which
// of its listing sources have not listed yet, and the reconciles in flight.
type runHealth struct {
	mu       sync.Mutex                // guards the fields below
	pending  map[*watchSource]struct{} // listing sources that have not listed yet
	inflight map[uint64]reconciling    // by the id begin returned
	seq      uint64                    // the last id begin returned
}

// reconciling is a reconcile in flight.
type reconciling struct {
	key   string
	start time.Time
}

func newRunHealth(sources []Source) *runHealth {
	h := &runHealth{pending: map[*watchSource]struct{}{}, inflight: map[uint64]reconciling{}}
	for _, s := range sources {
		if w, ok := s.(*watchSource); ok {
			h.pending[w] = struct{}{}
		}
	}
	return h
}

// synced records that s queued the keys of its first list.
func (h *runHealth) synced(s *watchSource) {
	h.mu.Lock()
	delete(h.pending, s)
	h.mu.Unlock()
}

func (h *runHealth) hasSynced() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pending) == 0
}

// begin records that a reconcile of key starts and returns its id for end.
func (h *runHealth) begin(key string) uint64 {
	start := time.Now()
	h.mu.Lock()
	h.seq++
	id := h.seq
	h.inflight[id] = reconciling{key: key, start: start}
	h.mu.Unlock()
	return id
}

// end records that the reconcile begin returned id for has returned.
func (h *runHealth) end(id uint64) {
	h.mu.Lock()
	delete(h.inflight, id)
	h.mu.Unlock()
}

// oldest returns the key and start of the reconcile in flight the longest.
func (h *runHealth) oldest() (key string, start time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.inflight {
		if !ok || r.start.Before(start) {
			key, start, ok = r.key, r.start, true
		}
	}
	return key, start, ok
}
