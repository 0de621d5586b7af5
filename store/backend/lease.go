package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/tendhq/tend/store"
)

// CheckLease is the preamble of [store.Leaser.AcquireLease] and
// [store.Leaser.RenewLease]: it returns ctx's error, or an error naming the
// lease and matching [store.ErrInvalid] when [ValidateLease] refuses the
// arguments, or nil.
func CheckLease(ctx context.Context, op, name, holder string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateLease(name, holder, ttl); err != nil {
		return &store.Error{Op: op, Key: name, Err: err}
	}
	return nil
}

// LeaseHeld is the error of an acquire refused because holder has the
// lease until until (zero when the backend does not know): it matches
// [store.ErrLeaseHeld].
func LeaseHeld(op, name, holder string, until time.Time) error {
	err := fmt.Errorf("%w: %q holds it", store.ErrLeaseHeld, holder)
	if !until.IsZero() {
		err = fmt.Errorf("%w: %q holds it until %v", store.ErrLeaseHeld, holder, until.Round(0))
	}
	return &store.Error{Op: op, Key: name, Err: err}
}

// LeaseLost is the error of a renewal of held that its holder no longer
// has at its fence: it matches [store.ErrLeaseLost].
func LeaseLost(op string, held store.Lease) error {
	return &store.Error{Op: op, Key: held.Name,
		Err: fmt.Errorf("%w: %q no longer holds it at fence %d", store.ErrLeaseLost, held.Holder, held.Fence)}
}
