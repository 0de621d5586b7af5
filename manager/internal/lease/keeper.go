package lease

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
)

// ErrGivenUp is the cause of a lease context ended because this replica
// gave the lease up.
var ErrGivenUp = errors.New("manager: lease given up")

// Config configures a [Keeper].
type Config struct {
	// Leaser takes, renews and releases the leases. Required.
	Leaser store.Leaser
	// Identity is the holder the leases are taken under.
	Identity string
	// Duration is how long a lease lasts without a renewal.
	Duration time.Duration
	// Renew is how often a held lease is renewed; it is also the margin
	// by which a [Held] ends before the store's expiry, and the bound on
	// the wait of a release.
	Renew time.Duration
	// Unfenced leaves the fence out of the contexts of held leases.
	Unfenced bool
	// Log receives the failures to renew and release. Required.
	Log *zap.Logger
	// OnRenewFailure, when not nil, is called for each renewal that failed:
	// refused by the store or unanswered.
	OnRenewFailure func()
}

// Keeper takes, renews and releases leases for one replica and records how
// its calls to the Leaser fare. Its methods may be called from any
// goroutine.
type Keeper struct {
	cfg    Config
	health health
	calls  store.Leaser
}

// New returns a Keeper configured by cfg. It starts nothing.
func New(cfg Config) *Keeper {
	k := &Keeper{cfg: cfg}
	k.calls = &calls{Leaser: cfg.Leaser, k: k}
	return k
}

// Leaser returns the Keeper's Leaser: each call is passed on to
// [Config.Leaser] and its outcome recorded for [Keeper.Wedged].
func (k *Keeper) Leaser() store.Leaser { return k.calls }

// Acquire tries once to take the named lease; the returned held lease's
// context derives from parent.
func (k *Keeper) Acquire(ctx, parent context.Context, name string) (*Held, error) {
	start := time.Now()
	l, err := k.calls.AcquireLease(ctx, name, k.cfg.Identity, k.cfg.Duration)
	if err != nil {
		return nil, err
	}
	return hold(k.Fenced(parent, l), l, start.Add(k.cfg.Duration-k.cfg.Renew)), nil
}

// Fenced returns ctx carrying the fence of lease l, or ctx itself when the
// Keeper runs unfenced.
func (k *Keeper) Fenced(ctx context.Context, l store.Lease) context.Context {
	if k.cfg.Unfenced {
		return ctx
	}
	return store.WithFence(ctx, store.Fence{Lease: l.Name, Token: l.Fence})
}

// Keep renews h once; it ends h when the store says the lease is lost.
func (k *Keeper) Keep(ctx context.Context, h *Held) {
	start := time.Now()
	l, err := k.calls.RenewLease(ctx, h.Current())
	switch {
	case err == nil:
		h.extend(l, start.Add(k.cfg.Duration-k.cfg.Renew))
	case errors.Is(err, store.ErrLeaseLost):
		h.End(store.ErrLeaseLost)
	case ctx.Err() == nil:
		k.cfg.Log.Warn("renewing lease", zap.String("lease", h.Current().Name), zap.Error(err))
	}
}

// Release gives a lease up, even after ctx ended.
func (k *Keeper) Release(ctx context.Context, l store.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.cfg.Renew)
	defer cancel()
	if err := k.calls.ReleaseLease(ctx, l); err != nil {
		k.cfg.Log.Warn("releasing lease", zap.String("lease", l.Name), zap.Error(err))
	}
}

// Reset forgets past failures of the Leaser, as a run starts.
func (k *Keeper) Reset() { k.health.reset() }

// Wedged returns why the calls to the Leaser look wedged at now, or "":
// they have been failing for longer than the lease duration, counted from
// the first call that failed since the Leaser last answered (an answer
// includes store.ErrLeaseHeld and store.ErrLeaseLost), or a call has been
// waiting that long.
func (k *Keeper) Wedged(now time.Time) string { return k.health.wedged(now, k.cfg.Duration) }

// Duration returns how long a lease lasts without a renewal, as the Keeper
// takes them.
func (k *Keeper) Duration() time.Duration { return k.cfg.Duration }

// RenewPeriod returns how often a held lease is to be renewed.
func (k *Keeper) RenewPeriod() time.Duration { return k.cfg.Renew }
