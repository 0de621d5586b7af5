package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tendhq/tend/internal/wait"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Times of the lease checks. Expiry follows the backend's clock, so the
// checks wait for real time; shortTTL keeps that wait small and longTTL
// makes sure a lease does not expire while a check that needs it held runs.
const (
	shortTTL = 400 * time.Millisecond
	longTTL  = 60 * time.Second
	pollStep = 20 * time.Millisecond
)

// wantLease checks the holder and fence of a lease.
func wantLease(what string, l store.Lease, name, holder string, fence int64) error {
	if l.Name != name || l.Holder != holder || l.Fence != fence {
		return fmt.Errorf("%s: got lease %q held by %q at fence %d, want %q by %q at %d", what, l.Name, l.Holder, l.Fence, name, holder, fence)
	}
	return nil
}

// listLeaseHolders returns "name=holder" for the leases under prefix.
func listLeaseHolders(ctx context.Context, b store.Backend, prefix string) ([]string, error) {
	ls, err := b.ListLeases(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list leases %q: %w", prefix, err)
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name + "=" + l.Holder
	}
	return out, nil
}

func expectLeases(ctx context.Context, b store.Backend, what, prefix string, want ...string) error {
	got, err := listLeaseHolders(ctx, b, prefix)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: leases under %q: got %q, want %q", what, prefix, got, want)
	}
	return nil
}

// checkLeaseExclusive: one holder at a time; the holder renews at the same
// fence; a release lets another holder in at a greater fence; the old
// holder can no longer renew; listing and bad arguments.
func checkLeaseExclusive(ctx context.Context, b store.Backend) error {
	const name = "tend/leader"
	a, err := b.AcquireLease(ctx, name, "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	if a.Fence < 1 || a.TTL != longTTL || a.Expires.IsZero() {
		return fmt.Errorf("acquire: fence %d, TTL %v, expires %v", a.Fence, a.TTL, a.Expires)
	}
	if err := wantLease("acquire", a, name, "a", a.Fence); err != nil {
		return err
	}
	_, err = b.AcquireLease(ctx, name, "b", longTTL)
	if err := wantErr("acquire by another holder", err, store.ErrLeaseHeld, "", name); err != nil {
		return err
	}
	again, err := b.AcquireLease(ctx, name, "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire again by the holder: %w", err)
	}
	if err := wantLease("acquire again by the holder", again, name, "a", a.Fence); err != nil {
		return err
	}
	renewed, err := b.RenewLease(ctx, again)
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	if err := wantLease("renew", renewed, name, "a", a.Fence); err != nil {
		return err
	}
	if renewed.Expires.Before(a.Expires) {
		return fmt.Errorf("renew moved expiry back from %v to %v", a.Expires, renewed.Expires)
	}
	if _, err := b.AcquireLease(ctx, "tend/shard-1", "b", longTTL); err != nil {
		return fmt.Errorf("acquire another lease: %w", err)
	}
	if _, err := b.AcquireLease(ctx, "other/x", "c", longTTL); err != nil {
		return fmt.Errorf("acquire another lease: %w", err)
	}
	if err := expectLeases(ctx, b, "three leases", "tend/", "tend/leader=a", "tend/shard-1=b"); err != nil {
		return err
	}
	if err := b.ReleaseLease(ctx, renewed); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := expectLeases(ctx, b, "after release", "tend/", "tend/shard-1=b"); err != nil {
		return err
	}
	bl, err := b.AcquireLease(ctx, name, "b", longTTL)
	if err != nil {
		return fmt.Errorf("acquire after release: %w", err)
	}
	if bl.Fence <= a.Fence {
		return fmt.Errorf("new holder got fence %d, not greater than %d", bl.Fence, a.Fence)
	}
	_, err = b.RenewLease(ctx, renewed)
	if err := wantErr("renew of a released lease", err, store.ErrLeaseLost, "", name); err != nil {
		return err
	}
	if err := b.ReleaseLease(ctx, renewed); err != nil {
		return fmt.Errorf("release of a lease no longer held: %w", err)
	}
	if _, err := b.AcquireLease(ctx, name, "c", longTTL); !errors.Is(err, store.ErrLeaseHeld) {
		return fmt.Errorf("a stale release let another holder in: %v", err)
	}
	if err := b.ReleaseLease(ctx, bl); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	back, err := b.AcquireLease(ctx, name, "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire by a returning holder: %w", err)
	}
	if back.Fence <= bl.Fence {
		return fmt.Errorf("returning holder got fence %d, not greater than %d", back.Fence, bl.Fence)
	}
	for _, c := range []struct {
		name, holder string
		ttl          time.Duration
	}{
		{"", "a", time.Second}, {"/bad", "a", time.Second}, {"tend/x", "", time.Second},
		{"tend/x", "a b", time.Second}, {"tend/x", "a", 0}, {"tend/x", "a", -time.Second},
	} {
		_, err := b.AcquireLease(ctx, c.name, c.holder, c.ttl)
		if !errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("acquire %q by %q for %v: got %v, want ErrInvalid", c.name, c.holder, c.ttl, err)
		}
	}
	return nil
}

// checkLeaseExpiry: an unrenewed lease lapses after its TTL, not before;
// another holder then gets it at a greater fence; expired leases are not
// listed; the old holder can no longer renew.
func checkLeaseExpiry(ctx context.Context, b store.Backend) error {
	const name = "tend/expiring"
	t0 := time.Now()
	if _, err := b.AcquireLease(ctx, "lapse/x", "x", shortTTL); err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	a, err := b.AcquireLease(ctx, name, "a", shortTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	_, err = b.AcquireLease(ctx, name, "b", shortTTL)
	if time.Since(t0) < shortTTL/2 && !errors.Is(err, store.ErrLeaseHeld) {
		return fmt.Errorf("acquire by another holder right away: got %v, want ErrLeaseHeld", err)
	}
	var bl store.Lease
	for {
		bl, err = b.AcquireLease(ctx, name, "b", longTTL)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return fmt.Errorf("acquire after expiry: %w", err)
		}
		if err := wait.Sleep(ctx, pollStep); err != nil {
			return fmt.Errorf("lease %q never expired: %w", name, err)
		}
	}
	if took := time.Since(t0); took < shortTTL {
		return fmt.Errorf("a lease with a TTL of %v was taken over after %v", shortTTL, took)
	}
	if err := wantLease("acquire after expiry", bl, name, "b", bl.Fence); err != nil {
		return err
	}
	if bl.Fence <= a.Fence {
		return fmt.Errorf("new holder got fence %d, not greater than %d", bl.Fence, a.Fence)
	}
	_, err = b.RenewLease(ctx, a)
	if err := wantErr("renew of an expired and taken lease", err, store.ErrLeaseLost, "", name); err != nil {
		return err
	}
	if err := expectLeases(ctx, b, "after expiry", "lapse/"); err != nil {
		return err
	}
	return expectLeases(ctx, b, "after take-over", "tend/", name+"=b")
}

// checkFencing: writes fenced by a lease succeed while it is held at the
// fence's token and fail with ErrFenced, writing nothing, once it was
// released, passed on, or expired.
func checkFencing(ctx context.Context, b store.Backend) error {
	if u, ok := b.(backend.Unfenced); ok {
		return checkFencingRefused(ctx, b, u.FencingUnsupported())
	}
	const name = "tend/shard-0"
	a, err := b.AcquireLease(ctx, name, "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	fa := store.WithFence(ctx, store.Fence{Lease: name, Token: a.Fence})
	d, err := b.Create(fa, newDoc(widget, "fenced", 1))
	if err != nil {
		return fmt.Errorf("fenced create while held: %w", err)
	}
	d.Spec = spec(2)
	if d, err = b.UpdateSpec(fa, d); err != nil {
		return fmt.Errorf("fenced update spec while held: %w", err)
	}
	d.Status = spec(3)
	if d, err = b.UpdateStatus(fa, d); err != nil {
		return fmt.Errorf("fenced update status while held: %w", err)
	}
	if _, err := b.Create(fa, newDoc(widget, "tmp", 1)); err != nil {
		return fmt.Errorf("fenced create while held: %w", err)
	}
	if err := b.Delete(fa, widget, "tmp", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("fenced delete while held: %w", err)
	}
	if err := b.ReleaseLease(ctx, a); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	bl, err := b.AcquireLease(ctx, name, "b", longTTL)
	if err != nil {
		return fmt.Errorf("acquire by the next holder: %w", err)
	}
	before, err := revision(ctx, b)
	if err != nil {
		return err
	}
	refused := func(what string, fctx context.Context) error {
		up := d
		up.Spec = spec(100)
		_, err := b.UpdateSpec(fctx, up)
		if err := wantErr(what+": update spec", err, store.ErrFenced, widget, "fenced"); err != nil {
			return err
		}
		up = d
		up.Status = spec(100)
		_, err = b.UpdateStatus(fctx, up)
		if err := wantErr(what+": update status", err, store.ErrFenced, widget, "fenced"); err != nil {
			return err
		}
		_, err = b.Create(fctx, newDoc(widget, "fenced-new", 1))
		if err := wantErr(what+": create", err, store.ErrFenced, widget, "fenced-new"); err != nil {
			return err
		}
		err = b.Delete(fctx, widget, "fenced", store.DeleteOptions{})
		return wantErr(what+": delete", err, store.ErrFenced, widget, "fenced")
	}
	for _, c := range []struct {
		what  string
		fence store.Fence
	}{
		{"old holder after hand-over", store.Fence{Lease: name, Token: a.Fence}},
		{"token ahead of the lease", store.Fence{Lease: name, Token: bl.Fence + 1}},
		{"unknown lease", store.Fence{Lease: "tend/none", Token: 1}},
	} {
		if err := refused(c.what, store.WithFence(ctx, c.fence)); err != nil {
			return err
		}
	}
	if err := expectStored(ctx, b, "after fenced-off writes", d); err != nil {
		return err
	}
	if err := expectAbsent(ctx, b, "after fenced-off create", widget, "fenced-new"); err != nil {
		return err
	}
	if after, err := revision(ctx, b); err != nil || after != before {
		return fmt.Errorf("fenced-off writes moved the revision from %d to %d (%v)", before, after, err)
	}
	fb := store.WithFence(ctx, store.Fence{Lease: name, Token: bl.Fence})
	d.Status = spec(4)
	if d, err = b.UpdateStatus(fb, d); err != nil {
		return fmt.Errorf("fenced write by the new holder: %w", err)
	}
	// A lease that expired fences its writes off even if nobody took it.
	t0 := time.Now()
	c, err := b.AcquireLease(ctx, "tend/short", "c", shortTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	fc := store.WithFence(ctx, store.Fence{Lease: "tend/short", Token: c.Fence})
	for i := 0; ; i++ {
		up := d
		up.Status = spec(1000 + i)
		got, err := b.UpdateStatus(fc, up)
		if err == nil {
			d = got
			if err := wait.Sleep(ctx, pollStep); err != nil {
				return fmt.Errorf("fenced writes still succeed long after the lease's TTL of %v: %w", shortTTL, err)
			}
			continue
		}
		if err := wantErr("fenced write after expiry", err, store.ErrFenced, widget, "fenced"); err != nil {
			return err
		}
		if took := time.Since(t0); took < shortTTL {
			return fmt.Errorf("fenced write refused %v after acquiring a lease with a TTL of %v", took, shortTTL)
		}
		return expectStored(ctx, b, "after the refused write", d)
	}
}

// checkFencingRefused is the Fencing check of an [backend.Unfenced] backend: every
// fenced write fails with want, naming its document, and writes nothing,
// while the lease stays held; unfenced writes still work.
func checkFencingRefused(ctx context.Context, b store.Backend, want error) error {
	if want == nil {
		return errors.New("FencingUnsupported returned nil: an Unfenced backend must name the error of its fenced writes")
	}
	const name = "tend/shard-0"
	a, err := b.AcquireLease(ctx, name, "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	d, err := b.Create(ctx, newDoc(widget, "fenced", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	before, err := revision(ctx, b)
	if err != nil {
		return err
	}
	fa := store.WithFence(ctx, store.Fence{Lease: name, Token: a.Fence})
	up := d
	up.Spec = spec(2)
	_, err = b.UpdateSpec(fa, up)
	if err := wantErr("fenced update spec", err, want, widget, "fenced"); err != nil {
		return err
	}
	up = d
	up.Status = spec(3)
	_, err = b.UpdateStatus(fa, up)
	if err := wantErr("fenced update status", err, want, widget, "fenced"); err != nil {
		return err
	}
	_, err = b.Create(fa, newDoc(widget, "fenced-new", 1))
	if err := wantErr("fenced create", err, want, widget, "fenced-new"); err != nil {
		return err
	}
	err = b.Delete(fa, widget, "fenced", store.DeleteOptions{})
	if err := wantErr("fenced delete", err, want, widget, "fenced"); err != nil {
		return err
	}
	if err := expectStored(ctx, b, "after refused fenced writes", d); err != nil {
		return err
	}
	if err := expectAbsent(ctx, b, "after a refused fenced create", widget, "fenced-new"); err != nil {
		return err
	}
	if after, err := revision(ctx, b); err != nil || after != before {
		return fmt.Errorf("refused fenced writes moved the revision from %d to %d (%v)", before, after, err)
	}
	if err := expectLeases(ctx, b, "after refused fenced writes", "tend/", name+"=a"); err != nil {
		return err
	}
	d.Status = spec(4)
	if _, err := b.UpdateStatus(ctx, d); err != nil {
		return fmt.Errorf("unfenced write after refused fenced writes: %w", err)
	}
	return nil
}
