package lease

import (
	"context"
	"sync"
	"time"

	"github.com/tendhq/tend/store"
)

// Held is a lease this replica holds. Its context carries the lease's fence
// (unless the Keeper runs unfenced) and ends when the lease is lost: when a
// renewal fails with store.ErrLeaseLost, or when the local deadline passes
// without a renewal.
//
// The local deadline is the start of the last successful acquire or renew
// plus the lease duration − the renew period. Measured from before the
// request, it is never later than the store's own expiry, and the renew
// period of margin lets reconciles see their context end before another
// replica can take the lease.
type Held struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex // guards lease, deadline and timer
	lease    store.Lease
	deadline time.Time
	timer    *time.Timer
}

// hold returns a held lease whose context derives from parent, which
// carries the lease's fence when the Keeper fences.
func hold(parent context.Context, l store.Lease, deadline time.Time) *Held {
	h := &Held{lease: l, deadline: deadline}
	h.ctx, h.cancel = context.WithCancelCause(parent)
	h.mu.Lock()
	h.timer = time.AfterFunc(time.Until(deadline), h.expire)
	h.mu.Unlock()
	return h
}

// expire runs when the timer fires: the lease is lost unless a renewal moved
// the deadline meanwhile.
func (h *Held) expire() {
	h.mu.Lock()
	left := time.Until(h.deadline)
	if left > 0 {
		h.timer.Reset(left)
	}
	h.mu.Unlock()
	if left <= 0 {
		h.cancel(store.ErrLeaseLost)
	}
}

// Context returns the lease's context: it carries the fence and ends, with
// its cause, when the lease is lost or [Held.End] is called.
func (h *Held) Context() context.Context { return h.ctx }

// Current returns the lease as last acquired or renewed.
func (h *Held) Current() store.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// extend records a successful renewal started at start.
func (h *Held) extend(l store.Lease, deadline time.Time) {
	h.mu.Lock()
	h.lease = l
	if deadline.After(h.deadline) {
		h.deadline = deadline
	}
	h.mu.Unlock()
}

// End ends the context with cause and stops the timer.
func (h *Held) End(cause error) {
	h.cancel(cause)
	h.mu.Lock()
	h.timer.Stop()
	h.mu.Unlock()
}

// Lost reports whether the context ended.
func (h *Held) Lost() bool { return h.ctx.Err() != nil }
