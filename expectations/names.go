package expectations

import (
	"maps"
	"sync"
	"time"
)

// NamesConfig configures [NewNames]. The zero value is ready to use.
type NamesConfig struct {
	// TTL is how long an expected name may stay unobserved before it expires and stops holding its key back. Zero
	// means [DefaultTTL]; negative is an error.
	TTL time.Duration

	// Now reads the clock. Nil means [time.Now], which testing/synctest fakes inside a bubble.
	Now func() time.Time
}

// Names tracks, per key, which specific names a controller expects to see created and deleted. A name is whatever
// identifies a dependent: a document key, a UID, a member id. Where [Counts] can only say "two more creations", Names
// says "members 4 and 5", so an unrelated creation cannot be mistaken for an expected one and a dependent that was
// created and then deleted again is not counted twice.
//
//   - Expecting a name adds it to the key's set, with its own TTL; expecting it again restarts that TTL.
//   - Observing an expected name removes it; observing a name that is not expected does nothing.
//   - A key is satisfied when none of its expected names is both unobserved and unexpired.
//
// A key whose names were all observed or expired is removed, when it is next touched or by an amortised sweep, so
// memory stays proportional to the names expected within the last TTL.
//
// A Names is safe for concurrent use.
type Names[K, N comparable] struct {
	clock ttlClock

	mu      sync.Mutex // guards entries and sweep
	entries map[K]*nameSet[N]
	sweep   sweeper
}

// nameSet is the expectations of one key: each expected name with the time it was expected.
type nameSet[N comparable] struct {
	add, del map[N]time.Time
}

// NewNames returns an empty Names configured by cfg. It fails with [ErrInvalidConfig] for a negative TTL.
func NewNames[K, N comparable](cfg NamesConfig) (*Names[K, N], error) {
	clock, err := newTTLClock(cfg.TTL, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Names[K, N]{clock: clock, entries: make(map[K]*nameSet[N])}, nil
}

// ExpectCreations adds names to the creations key expects. Call it before issuing the creations, so that an
// observation cannot arrive before its expectation.
func (n *Names[K, N]) ExpectCreations(key K, names ...N) {
	n.expect(key, names, func(s *nameSet[N]) map[N]time.Time { return s.add })
}

// ExpectDeletions adds names to the deletions key expects. Call it before issuing the deletions.
func (n *Names[K, N]) ExpectDeletions(key K, names ...N) {
	n.expect(key, names, func(s *nameSet[N]) map[N]time.Time { return s.del })
}

func (n *Names[K, N]) expect(key K, names []N, set func(*nameSet[N]) map[N]time.Time) {
	if len(names) == 0 {
		return
	}
	now := n.clock.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.entries[key]
	if !ok {
		s = &nameSet[N]{add: make(map[N]time.Time), del: make(map[N]time.Time)}
		n.entries[key] = s
	}
	m := set(s)
	for _, name := range names {
		m[name] = now
	}
	sweep(&n.sweep, n.entries, func(_ K, s *nameSet[N]) bool { return n.pruneLocked(s, now) })
}

// CreationObserved records that name, a dependent of key, was seen created. Controllers also call it for a creation
// they issued but that failed, since it will never be observed.
func (n *Names[K, N]) CreationObserved(key K, name N) {
	n.observe(key, name, func(s *nameSet[N]) map[N]time.Time { return s.add })
}

// DeletionObserved records that name, a dependent of key, was seen deleted, or that its deletion failed to be issued.
func (n *Names[K, N]) DeletionObserved(key K, name N) {
	n.observe(key, name, func(s *nameSet[N]) map[N]time.Time { return s.del })
}

func (n *Names[K, N]) observe(key K, name N, set func(*nameSet[N]) map[N]time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.entries[key]
	if !ok {
		return
	}
	delete(set(s), name)
	if len(s.add) == 0 && len(s.del) == 0 {
		delete(n.entries, key)
	}
}

// SatisfiedExpectations reports whether the controller may act on key: true unless some name key expects is still
// unobserved and unexpired.
func (n *Names[K, N]) SatisfiedExpectations(key K) bool {
	now := n.clock.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.liveLocked(key, now) == nil
}

// Pending returns the names key still expects to see created and deleted, unobserved and unexpired, in no
// particular order.
func (n *Names[K, N]) Pending(key K) (creations, deletions []N) {
	now := n.clock.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.liveLocked(key, now)
	if s == nil {
		return nil, nil
	}
	return keys(s.add), keys(s.del)
}

// DeleteExpectations forgets every name key expects, for example when the document the key names is deleted.
func (n *Names[K, N]) DeleteExpectations(key K) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.entries, key)
}

// Len returns the number of keys held, including ones whose names all expired but were not yet removed.
func (n *Names[K, N]) Len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.entries)
}

// liveLocked returns the live expectations of key at now, or nil after removing the key if none is left.
func (n *Names[K, N]) liveLocked(key K, now time.Time) *nameSet[N] {
	s, ok := n.entries[key]
	if !ok {
		return nil
	}
	if n.pruneLocked(s, now) {
		delete(n.entries, key)
		return nil
	}
	return s
}

// pruneLocked drops the expired names of s and reports whether s is left empty.
func (n *Names[K, N]) pruneLocked(s *nameSet[N], now time.Time) bool {
	expired := func(_ N, set time.Time) bool { return n.clock.expired(set, now) }
	maps.DeleteFunc(s.add, expired)
	maps.DeleteFunc(s.del, expired)
	return len(s.add) == 0 && len(s.del) == 0
}

// keys returns the keys of m in no particular order, or nil if m is empty.
func keys[N comparable](m map[N]time.Time) []N {
	if len(m) == 0 {
		return nil
	}
	out := make([]N, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	return out
}
