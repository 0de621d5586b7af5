package expectations

import (
	"sync"
	"time"
)

// CountsConfig configures [NewCounts]. The zero value is ready to use.
type CountsConfig struct {
	// TTL is how long expectations may stay unmet before they expire and stop holding the key back. Zero means
	// [DefaultTTL]; negative is an error.
	TTL time.Duration

	// Now reads the clock. Nil means [time.Now], which testing/synctest fakes inside a bubble.
	Now func() time.Time
}

// Counts tracks, per key, how many creations and deletions a controller still expects to observe, with the semantics
// of Kubernetes' ControllerExpectations:
//
//   - a key with no expectations, or whose expectations expired, is satisfied;
//   - otherwise it is satisfied when both counts are at or below zero;
//   - expectations expire one TTL after they were last set; raising, lowering and observing do not extend them;
//   - raising, lowering and observing a key without live expectations do nothing.
//
// Expired entries are removed when their key is next touched and by an amortised sweep, so memory stays
// proportional to the keys whose expectations were set within the last TTL. Met expectations are kept until they
// expire or are deleted, because raising them again must make the key unsatisfied, as it does in Kubernetes.
//
// A Counts is safe for concurrent use.
type Counts[K comparable] struct {
	clock ttlClock

	mu      sync.Mutex // guards entries and sweep
	entries map[K]*count
	sweep   sweeper
}

// count is the expectations of one key.
type count struct {
	add, del int
	set      time.Time
}

// NewCounts returns an empty Counts configured by cfg. It fails with [ErrInvalidConfig] for a negative TTL.
func NewCounts[K comparable](cfg CountsConfig) (*Counts[K], error) {
	clock, err := newTTLClock(cfg.TTL, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Counts[K]{clock: clock, entries: make(map[K]*count)}, nil
}

// SetExpectations replaces the expectations of key with add creations and del deletions and restarts their TTL.
// Counts at or below zero are already met.
func (c *Counts[K]) SetExpectations(key K, add, del int) {
	now := c.clock.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		*e = count{add: add, del: del, set: now}
	} else {
		c.entries[key] = &count{add: add, del: del, set: now}
	}
	sweep(&c.sweep, c.entries, func(_ K, e *count) bool { return c.clock.expired(e.set, now) })
}

// ExpectCreations replaces the expectations of key with n creations and no deletions. Call it before issuing the
// creations, so that an observation cannot arrive before its expectation.
func (c *Counts[K]) ExpectCreations(key K, n int) {
	c.SetExpectations(key, n, 0)
}

// ExpectDeletions replaces the expectations of key with n deletions and no creations. Call it before issuing the
// deletions.
func (c *Counts[K]) ExpectDeletions(key K, n int) {
	c.SetExpectations(key, 0, n)
}

// CreationObserved records that one expected creation for key was seen. Controllers also call it for a creation
// they issued but that failed, since it will never be observed.
func (c *Counts[K]) CreationObserved(key K) {
	c.adjust(key, -1, 0)
}

// DeletionObserved records that one expected deletion for key was seen, or failed to be issued.
func (c *Counts[K]) DeletionObserved(key K) {
	c.adjust(key, 0, -1)
}

// RaiseExpectations adds add creations and del deletions to the live expectations of key, without restarting their
// TTL. It does nothing if key has no live expectations.
func (c *Counts[K]) RaiseExpectations(key K, add, del int) {
	c.adjust(key, add, del)
}

// LowerExpectations subtracts add creations and del deletions from the live expectations of key. It does nothing
// if key has no live expectations.
func (c *Counts[K]) LowerExpectations(key K, add, del int) {
	c.adjust(key, -add, -del)
}

func (c *Counts[K]) adjust(key K, add, del int) {
	now := c.clock.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.liveLocked(key, now); e != nil {
		e.add += add
		e.del += del
	}
}

// SatisfiedExpectations reports whether the controller may act on key: true if key has no expectations, if they
// expired, or if every expected creation and deletion was observed.
func (c *Counts[K]) SatisfiedExpectations(key K) bool {
	now := c.clock.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.liveLocked(key, now)
	return e == nil || (e.add <= 0 && e.del <= 0)
}

// Get returns the creations and deletions key still expects; ok is false if key has no live expectations. A count
// may be negative when more was observed than expected.
func (c *Counts[K]) Get(key K) (add, del int, ok bool) {
	now := c.clock.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.liveLocked(key, now)
	if e == nil {
		return 0, 0, false
	}
	return e.add, e.del, true
}

// DeleteExpectations forgets the expectations of key, for example when the document the key names is deleted.
func (c *Counts[K]) DeleteExpectations(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// Len returns the number of keys held, including expired ones not yet removed.
func (c *Counts[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// liveLocked returns the unexpired expectations of key, or nil after removing expired ones.
func (c *Counts[K]) liveLocked(key K, now time.Time) *count {
	e, ok := c.entries[key]
	if !ok {
		return nil
	}
	if c.clock.expired(e.set, now) {
		delete(c.entries, key)
		return nil
	}
	return e
}
