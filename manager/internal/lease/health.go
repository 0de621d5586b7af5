package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tendhq/tend/store"
)

// health is what the health checks read of a Keeper's calls to its Leaser.
type health struct {
	mu sync.Mutex // guards the fields below
	// failingSince is when the first call failed since the Leaser last
	// answered; zero when the last call was answered.
	failingSince time.Time
	lastErr      error                // the last failure, while failingSince is set
	calls        map[uint64]time.Time // calls in flight: when each started
	seq          uint64               // the last id begin returned
}

// reset forgets past failures, as a run starts.
func (h *health) reset() {
	h.mu.Lock()
	h.failingSince, h.lastErr = time.Time{}, nil
	h.mu.Unlock()
}

// begin records that a call starts and returns its id for end.
func (h *health) begin() uint64 {
	start := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[uint64]time.Time{}
	}
	h.seq++
	h.calls[h.seq] = start
	return h.seq
}

// end records how the call begin returned id for ended, made with ctx. It
// reports whether the call failed: it got no answer, or one refusing the
// lease, while the Keeper still wanted it.
func (h *health) end(id uint64, ctx context.Context, err error) (failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.calls, id)
	switch {
	case err == nil || errors.Is(err, store.ErrLeaseHeld) || errors.Is(err, store.ErrLeaseLost):
		h.failingSince, h.lastErr = time.Time{}, nil
		return err != nil
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), store.ErrLeaseLost):
		// The caller stopped waiting: it gave the lease up or stops. A
		// context ended by store.ErrLeaseLost is a lease that lapsed while
		// the call waited: a failure.
		return false
	}
	if h.failingSince.IsZero() {
		h.failingSince = time.Now()
	}
	h.lastErr = err
	return true
}

// wedged returns why the lease calls look wedged at now, or "".
func (h *health) wedged(now time.Time, limit time.Duration) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failingSince.IsZero() && now.Sub(h.failingSince) > limit {
		return fmt.Sprintf("lease calls have been failing for %v, longer than the lease duration %v: %v",
			now.Sub(h.failingSince), limit, h.lastErr)
	}
	for _, start := range h.calls {
		if now.Sub(start) > limit {
			return fmt.Sprintf("a lease call has been waiting for %v, longer than the lease duration %v", now.Sub(start), limit)
		}
	}
	return ""
}

// calls is the Leaser a Keeper calls: it passes each call on to the
// configured Leaser and records its outcome for the health checks and the
// renewal failures.
type calls struct {
	store.Leaser
	k *Keeper
}

func (l *calls) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	id := l.k.health.begin()
	lease, err := l.Leaser.AcquireLease(ctx, name, holder, ttl)
	l.k.health.end(id, ctx, err)
	return lease, err
}

func (l *calls) RenewLease(ctx context.Context, held store.Lease) (store.Lease, error) {
	id := l.k.health.begin()
	lease, err := l.Leaser.RenewLease(ctx, held)
	if l.k.health.end(id, ctx, err) && l.k.cfg.OnRenewFailure != nil {
		l.k.cfg.OnRenewFailure()
	}
	return lease, err
}

func (l *calls) ReleaseLease(ctx context.Context, held store.Lease) error {
	id := l.k.health.begin()
	err := l.Leaser.ReleaseLease(ctx, held)
	l.k.health.end(id, ctx, err)
	return err
}

func (l *calls) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	id := l.k.health.begin()
	leases, err := l.Leaser.ListLeases(ctx, prefix)
	l.k.health.end(id, ctx, err)
	return leases, err
}
