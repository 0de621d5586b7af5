package expectations

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// DefaultTTL is how long an expectation may stay unmet before it expires when a Config leaves TTL zero. It is the
// value Kubernetes controllers use: long enough for a slow watch, short enough that a lost event or a write that
// silently failed delays a controller by minutes, not forever.
const DefaultTTL = 5 * time.Minute

// ErrInvalidConfig is returned, wrapped with the reason, by constructors given a Config they cannot use.
var ErrInvalidConfig = errors.New("expectations: invalid config")

// ttlClock decides expiry for the timed trackers, [Counts] and [Names].
type ttlClock struct {
	ttl time.Duration
	now func() time.Time
}

// newTTLClock applies the documented defaults (zero TTL is [DefaultTTL], nil now is [time.Now]) and rejects a
// negative TTL.
func newTTLClock(ttl time.Duration, now func() time.Time) (ttlClock, error) {
	if ttl < 0 {
		return ttlClock{}, fmt.Errorf("%w: negative TTL %v", ErrInvalidConfig, ttl)
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return ttlClock{ttl: ttl, now: now}, nil
}

// expired reports whether an expectation recorded at set has outlived the TTL at now. Like Kubernetes, an
// expectation is still alive at exactly one TTL and expired just after.
func (c ttlClock) expired(set, now time.Time) bool {
	return now.Sub(set) > c.ttl
}

// minSweep is the size below which a tracker never bothers to sweep.
const minSweep = 64

// sweeper amortises the removal of dead entries (expired, met or caught up) that nobody asked about again: a full
// pass runs only once the map has doubled since the previous pass left it, so each insert pays O(1) on average and a
// map never holds more than about twice its live entries plus [minSweep].
type sweeper struct {
	next int
}

// sweep deletes the entries of m for which dead reports true, if m has grown enough since the last sweep.
func sweep[K comparable, V any](s *sweeper, m map[K]V, dead func(K, V) bool) {
	if len(m) < max(s.next, minSweep) {
		return
	}
	maps.DeleteFunc(m, dead)
	s.next = 2 * len(m)
}
