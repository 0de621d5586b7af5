package manager

import (
	"context"
	"sync"
	"time"

	"github.com/tendhq/tend/store"
)

// held is a lease this replica holds. Its context carries the lease's fence
// (unless the manager runs unfenced) and ends when the lease is lost: when a renewal fails with
// store.ErrLeaseLost, or when the local deadline passes without a renewal.
//
// The local deadline is the start of the last successful acquire or renew
// plus LeaseDuration − RenewPeriod. Measured from before the request, it is
// never later than the store's own expiry, and the RenewPeriod of margin lets
// reconciles see their context end before another replica can take the lease.
type held struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex // guards lease, deadline and timer
	lease    store.Lease
	deadline time.Time
	timer    *time.Timer
}

// hold returns a held lease whose context derives from parent, which
// carries the lease's fence when the manager fences.
func hold(parent context.Context, l store.Lease, deadline time.Time) *held {
	h := &held{lease: l, deadline: deadline}
	h.ctx, h.cancel = context.WithCancelCause(parent)
	h.mu.Lock()
	h.timer = time.AfterFunc(time.Until(deadline), h.expire)
	h.mu.Unlock()
	return h
}

// expire runs when the timer fires: the lease is lost unless a renewal moved
// the deadline meanwhile.
func (h *held) expire() {
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

// current returns the lease as last acquired or renewed.
func (h *held) current() store.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// extend records a successful renewal started at start.
func (h *held) extend(l store.Lease, deadline time.Time) {
	h.mu.Lock()
	h.lease = l
	if deadline.After(h.deadline) {
		h.deadline = deadline
	}
	h.mu.Unlock()
}

// end ends the context with cause and stops the timer.
func (h *held) end(cause error) {
	h.cancel(cause)
	h.mu.Lock()
	h.timer.Stop()
	h.mu.Unlock()
}

// lost reports whether the context ended.
func (h *held) lost() bool { return h.ctx.Err() != nil }
