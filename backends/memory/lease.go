package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// lease is the state of one named lease. It outlives its holders so that
// fences keep growing after a release.
type lease struct {
	holder  string
	fence   int64
	ttl     time.Duration
	expires time.Time
	held    bool // false once released
}

func (l *lease) public(name string) store.Lease {
	return store.Lease{Name: name, Holder: l.holder, Fence: l.fence, TTL: l.ttl, Expires: l.expires}
}

// AcquireLease takes or renews the named lease for holder.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := backend.CheckLease(ctx, op, name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	l := s.leases[name]
	switch {
	case l == nil:
		l = &lease{}
		s.leases[name] = l
		l.fence++
	case l.held && l.holder == holder:
		// A renewal: nobody held the lease in between, so the fence stays.
	case l.held && now.Before(l.expires):
		return store.Lease{}, backend.LeaseHeld(op, name, l.holder, l.expires)
	default:
		l.fence++
	}
	l.holder, l.ttl, l.expires, l.held = holder, ttl, now.Add(ttl), true
	return l.public(name), nil
}

// RenewLease extends a lease its holder still has.
func (s *Store) RenewLease(ctx context.Context, held store.Lease) (store.Lease, error) {
	const op = "renew lease"
	ttl := held.TTL
	if err := backend.CheckLease(ctx, op, held.Name, held.Holder, ttl); err != nil {
		return store.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[held.Name]
	if !l.isHeld(held) {
		return store.Lease{}, backend.LeaseLost(op, held)
	}
	l.ttl, l.expires = ttl, s.now().Add(ttl)
	return l.public(held.Name), nil
}

// ReleaseLease gives up a lease its holder still has.
func (s *Store) ReleaseLease(ctx context.Context, held store.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[held.Name]; l.isHeld(held) {
		l.held = false
	}
	return nil
}

// isHeld reports whether l is still held by the holder of h at h's fence.
func (l *lease) isHeld(h store.Lease) bool {
	return l != nil && l.held && l.holder == h.Holder && l.fence == h.Fence
}

// ListLeases returns the unexpired leases whose names start with prefix.
func (s *Store) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	var out []store.Lease
	for name, l := range s.leases {
		if l.held && now.Before(l.expires) && strings.HasPrefix(name, prefix) {
			out = append(out, l.public(name))
		}
	}
	slices.SortFunc(out, func(a, b store.Lease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
