package lease_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager/internal/lease"
	"github.com/tendhq/tend/store"
)

// outage is a Leaser whose renewals fail while down is set, as a store
// that stopped answering.
type outage struct {
	store.Leaser
	down bool
}

var errOutage = errors.New("store unreachable")

func (o *outage) RenewLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if o.down {
		return store.Lease{}, errOutage
	}
	return o.Leaser.RenewLease(ctx, l)
}

func newKeeper(t *testing.T, l store.Leaser, onFailure func()) *lease.Keeper {
	t.Helper()
	return lease.New(lease.Config{Leaser: l, Identity: "a", Duration: 3 * time.Second, Renew: time.Second,
		Log: zap.NewNop(), OnRenewFailure: onFailure})
}

func newMemory(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHeldRenewedAndLost checks that a held lease lives as long as it is
// renewed, and that its context ends with store.ErrLeaseLost, before the
// store's expiry, once the renewals fail.
func TestHeldRenewedAndLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &outage{Leaser: newMemory(t)}
		failures := 0
		k := newKeeper(t, o, func() { failures++ })
		ctx := t.Context()
		h, err := k.Acquire(ctx, context.Background(), "leader")
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := store.FenceFrom(h.Context()); !ok || f.Lease != "leader" || f.Token != h.Current().Fence {
			t.Fatalf("the held lease's context carries fence %+v, %v; want the lease's", f, ok)
		}
		for range 5 {
			time.Sleep(time.Second)
			k.Keep(ctx, h)
		}
		if h.Lost() {
			t.Fatalf("a lease renewed each renew period was lost: %v", context.Cause(h.Context()))
		}
		o.down = true
		acquired := time.Now()
		k.Keep(ctx, h)
		<-h.Context().Done()
		if cause := context.Cause(h.Context()); !errors.Is(cause, store.ErrLeaseLost) {
			t.Errorf("the lease ended with %v, want store.ErrLeaseLost", cause)
		}
		if lived := time.Since(acquired); lived > 2*time.Second {
			t.Errorf("the lease was held %v after its last renewal, past the duration less the renew period", lived)
		}
		if failures != 1 {
			t.Errorf("OnRenewFailure was called %d times, want 1", failures)
		}
		h.End(lease.ErrGivenUp)
	})
}

// TestWedged checks that the Keeper reports its Leaser wedged only once its
// calls have been failing for longer than the lease duration, and no more
// once the Leaser answers again, refusal included.
func TestWedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemory(t)
		o := &outage{Leaser: mem}
		k := newKeeper(t, o, nil)
		ctx := t.Context()
		h, err := k.Acquire(ctx, context.Background(), "leader")
		if err != nil {
			t.Fatal(err)
		}
		defer h.End(lease.ErrGivenUp)
		o.down = true
		k.Keep(ctx, h)
		start := time.Now()
		if why := k.Wedged(start.Add(2 * time.Second)); why != "" {
			t.Errorf("wedged within the lease duration: %s", why)
		}
		if why := k.Wedged(start.Add(4 * time.Second)); why == "" {
			t.Error("not wedged after failing for longer than the lease duration")
		}
		if _, err := mem.AcquireLease(ctx, "other", "b", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Acquire(ctx, context.Background(), "other"); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("acquiring a lease held by another: %v, want store.ErrLeaseHeld", err)
		}
		if why := k.Wedged(start.Add(4 * time.Second)); why != "" {
			t.Errorf("still wedged after the Leaser answered: %s", why)
		}
	})
}
