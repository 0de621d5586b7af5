package backend

import (
	"fmt"
	"time"

	"github.com/tendhq/tend/store"
)

// ValidateFinalizers checks each name with [store.ValidateFinalizer] and refuses
// duplicates.
func ValidateFinalizers(names []string) error {
	for i, f := range names {
		if err := store.ValidateFinalizer(f); err != nil {
			return err
		}
		for _, g := range names[:i] {
			if f == g {
				return invalid("finalizer %q: listed twice", f)
			}
		}
	}
	return nil
}

// ValidateOwners checks owner references: each names a valid kind and key
// and a non-empty UID, no UID appears twice, and at most one reference is
// the controller.
func ValidateOwners(owners []store.OwnerRef) error {
	controllers := 0
	for i, o := range owners {
		if err := store.ValidateKind(o.Kind); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
		if err := store.ValidateKey(o.Key); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
		if o.UID == "" {
			return invalid("owner %s %q: empty UID", o.Kind, o.Key)
		}
		for _, p := range owners[:i] {
			if p.UID == o.UID {
				return invalid("owner %s %q: UID %q listed twice", o.Kind, o.Key, o.UID)
			}
		}
		if o.Controller {
			controllers++
		}
	}
	if controllers > 1 {
		return invalid("owners: %d references are marked controller; at most one may be", controllers)
	}
	return nil
}

// ValidateMeta checks the parts of m a writer supplies: kind, key, labels,
// finalizers and owners. Backends call it before every Create and
// UpdateSpec.
func ValidateMeta(m *store.Meta) error {
	if err := store.ValidateKind(m.Kind); err != nil {
		return err
	}
	if err := store.ValidateKey(m.Key); err != nil {
		return err
	}
	if err := store.ValidateLabels(m.Labels); err != nil {
		return err
	}
	if err := ValidateFinalizers(m.Finalizers); err != nil {
		return err
	}
	return ValidateOwners(m.Owners)
}

// ValidateLease checks the arguments of a lease request: the name follows
// the rules of [store.ValidateKey], the holder is 1 to 253 bytes of printable
// ASCII without spaces, and ttl is positive.
func ValidateLease(name, holder string, ttl time.Duration) error {
	if err := store.ValidateKey(name); err != nil {
		return fmt.Errorf("lease name: %w", err)
	}
	if len(holder) == 0 || len(holder) > store.MaxKeyLen {
		return invalid("lease holder %q: must be 1 to %d bytes", holder, store.MaxKeyLen)
	}
	for i := 0; i < len(holder); i++ {
		if c := holder[i]; c <= ' ' || c > '~' {
			return invalid("lease holder %q: character %q is not allowed", holder, c)
		}
	}
	if ttl <= 0 {
		return invalid("lease %q: time to live %v must be positive", name, ttl)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{store.ErrInvalid}, args...)...)
}
