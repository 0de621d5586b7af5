package workqueue

import (
	"cmp"
	"fmt"
	"sync"
	"time"
)

// RateLimiter decides how long a key waits before it is retried.
// Implementations must be safe for concurrent use.
type RateLimiter[K comparable] interface {
	// When records a failure of key and returns how long to wait before
	// retrying it.
	When(key K) time.Duration
	// Forget drops what the limiter remembers about key: its next failure
	// starts from the first delay again.
	Forget(key K)
	// NumRequeues returns how many failures of key the limiter remembers.
	NumRequeues(key K) int
}

// Backoff is a retry schedule that depends only on how many times in a row
// something failed, so that a caller can keep the count (in a document's
// status, say) and find the same delay after a restart. The per-key limiters
// of this package implement it with the schedule their When follows.
type Backoff interface {
	// Delay returns how long to wait after the n-th consecutive failure
	// (n ≥ 1; a smaller n counts as 1).
	Delay(n int) time.Duration
}

// BackoffFunc adapts a function to a [Backoff].
type BackoffFunc func(n int) time.Duration

// Delay calls f(n).
func (f BackoffFunc) Delay(n int) time.Duration { return f(n) }

// DefaultBackoff returns the per-key schedule of
// [DefaultControllerRateLimiter]: 5 ms, doubling with each failure, up to
// 1000 s.
func DefaultBackoff() Backoff {
	exp, _ := NewExponentialLimiter[struct{}](ExponentialConfig{})
	return exp
}

// DefaultControllerRateLimiter returns the limiter controllers use by
// default: the larger of a per-key exponential backoff from 5 ms to 1000 s and
// an overall token bucket of 10 retries per second with a burst of 100.
func DefaultControllerRateLimiter[K comparable]() *MaxOfLimiter[K] {
	exp, _ := NewExponentialLimiter[K](ExponentialConfig{})
	bucket, _ := NewTokenBucketLimiter[K](TokenBucketConfig{})
	return &MaxOfLimiter[K]{limiters: []RateLimiter[K]{exp, bucket}}
}

// ExponentialConfig configures [NewExponentialLimiter].
type ExponentialConfig struct {
	// Base is the first delay; each further failure doubles it. Zero means 5 ms.
	Base time.Duration
	// Max caps the delay. Zero means 1000 s. It must not be below Base.
	Max time.Duration
	// IdleTimeout is how long a key's failure count is kept after its last
	// failure; after that the key starts over and its state is freed, even if
	// Forget is never called. Zero means twice Max.
	IdleTimeout time.Duration
}

// ExponentialLimiter delays the n-th consecutive failure of a key by
// Base × 2ⁿ⁻¹, up to Max.
type ExponentialLimiter[K comparable] struct {
	base, max time.Duration
	failures  failures[K]
}

// NewExponentialLimiter returns a per-key exponential backoff limiter.
func NewExponentialLimiter[K comparable](cfg ExponentialConfig) (*ExponentialLimiter[K], error) {
	base := cmp.Or(cfg.Base, 5*time.Millisecond)
	maxDelay := cmp.Or(cfg.Max, 1000*time.Second)
	if err := nonNegative(named{"Base", cfg.Base}, named{"Max", cfg.Max}, named{"IdleTimeout", cfg.IdleTimeout}); err != nil {
		return nil, err
	}
	if maxDelay < base {
		return nil, fmt.Errorf("%w: Max %v is below Base %v", ErrInvalidConfig, maxDelay, base)
	}
	return &ExponentialLimiter[K]{
		base:     base,
		max:      maxDelay,
		failures: newFailures[K](cmp.Or(cfg.IdleTimeout, 2*maxDelay)),
	}, nil
}

// When implements [RateLimiter].
func (l *ExponentialLimiter[K]) When(key K) time.Duration {
	return l.Delay(l.failures.next(key) + 1)
}

// Delay implements [Backoff]: Base × 2ⁿ⁻¹, up to Max.
func (l *ExponentialLimiter[K]) Delay(n int) time.Duration {
	n = max(n, 1) - 1
	if n >= 62 || l.base > l.max>>n {
		return l.max
	}
	return l.base << n
}

// Forget implements [RateLimiter].
func (l *ExponentialLimiter[K]) Forget(key K) { l.failures.forget(key) }

// NumRequeues implements [RateLimiter].
func (l *ExponentialLimiter[K]) NumRequeues(key K) int { return l.failures.count(key) }

// FastSlowConfig configures [NewFastSlowLimiter].
type FastSlowConfig struct {
	// Fast is the delay of the first FastAttempts failures. Zero means 5 ms.
	Fast time.Duration
	// Slow is the delay of every later failure. Zero means 10 s. It must not
	// be below Fast.
	Slow time.Duration
	// FastAttempts is how many failures get the fast delay. Zero means 5.
	FastAttempts int
	// IdleTimeout is how long a key's failure count is kept after its last
	// failure, as in [ExponentialConfig]. Zero means twice Slow.
	IdleTimeout time.Duration
}

// FastSlowLimiter retries a key quickly a few times, then slowly.
type FastSlowLimiter[K comparable] struct {
	fast, slow time.Duration
	attempts   int
	failures   failures[K]
}

// NewFastSlowLimiter returns a per-key limiter with a fast then a slow delay.
func NewFastSlowLimiter[K comparable](cfg FastSlowConfig) (*FastSlowLimiter[K], error) {
	fast := cmp.Or(cfg.Fast, 5*time.Millisecond)
	slow := cmp.Or(cfg.Slow, 10*time.Second)
	if err := nonNegative(named{"Fast", cfg.Fast}, named{"Slow", cfg.Slow}, named{"IdleTimeout", cfg.IdleTimeout}); err != nil {
		return nil, err
	}
	if cfg.FastAttempts < 0 {
		return nil, fmt.Errorf("%w: FastAttempts %d is negative", ErrInvalidConfig, cfg.FastAttempts)
	}
	if slow < fast {
		return nil, fmt.Errorf("%w: Slow %v is below Fast %v", ErrInvalidConfig, slow, fast)
	}
	return &FastSlowLimiter[K]{
		fast:     fast,
		slow:     slow,
		attempts: cmp.Or(cfg.FastAttempts, 5),
		failures: newFailures[K](cmp.Or(cfg.IdleTimeout, 2*slow)),
	}, nil
}

// When implements [RateLimiter].
func (l *FastSlowLimiter[K]) When(key K) time.Duration {
	return l.Delay(l.failures.next(key) + 1)
}

// Delay implements [Backoff]: Fast for the first FastAttempts failures, then
// Slow.
func (l *FastSlowLimiter[K]) Delay(n int) time.Duration {
	if n <= l.attempts {
		return l.fast
	}
	return l.slow
}

// Forget implements [RateLimiter].
func (l *FastSlowLimiter[K]) Forget(key K) { l.failures.forget(key) }

// NumRequeues implements [RateLimiter].
func (l *FastSlowLimiter[K]) NumRequeues(key K) int { return l.failures.count(key) }

// TokenBucketConfig configures [NewTokenBucketLimiter].
type TokenBucketConfig struct {
	// QPS is the sustained rate of retries, over all keys. Zero means 10.
	QPS float64
	// Burst is how many retries may go without delay after a quiet period.
	// Zero means 100.
	Burst int
}

// TokenBucketLimiter spaces retries of all keys together to a steady rate
// after an initial burst. It keeps no per-key state: Forget does nothing and
// NumRequeues is always zero.
type TokenBucketLimiter[K comparable] struct {
	qps   float64
	burst float64

	mu     sync.Mutex // guards tokens and last
	tokens float64    // may be negative: retries already promised a slot
	last   time.Time  // when tokens was computed; zero before the first When
}

// NewTokenBucketLimiter returns an overall token bucket limiter.
func NewTokenBucketLimiter[K comparable](cfg TokenBucketConfig) (*TokenBucketLimiter[K], error) {
	if !(cfg.QPS >= 0) {
		return nil, fmt.Errorf("%w: QPS %v is not a number >= 0", ErrInvalidConfig, cfg.QPS)
	}
	if cfg.Burst < 0 {
		return nil, fmt.Errorf("%w: Burst %d is negative", ErrInvalidConfig, cfg.Burst)
	}
	burst := float64(cmp.Or(cfg.Burst, 100))
	return &TokenBucketLimiter[K]{qps: cmp.Or(cfg.QPS, 10), burst: burst, tokens: burst}, nil
}

// When implements [RateLimiter]: it takes one token and returns how long
// until that token exists.
func (l *TokenBucketLimiter[K]) When(K) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.qps)
	}
	l.last = now
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.qps * float64(time.Second))
}

// Forget implements [RateLimiter]; it does nothing.
func (l *TokenBucketLimiter[K]) Forget(K) {}

// NumRequeues implements [RateLimiter]; it is always zero.
func (l *TokenBucketLimiter[K]) NumRequeues(K) int { return 0 }

// MaxOfLimiter combines limiters: a key waits for the longest of their delays.
type MaxOfLimiter[K comparable] struct {
	limiters []RateLimiter[K]
}

// NewMaxOfLimiter returns a limiter that applies all the given limiters and
// waits for the longest delay. It needs at least one limiter.
func NewMaxOfLimiter[K comparable](limiters ...RateLimiter[K]) (*MaxOfLimiter[K], error) {
	if len(limiters) == 0 {
		return nil, fmt.Errorf("%w: no limiter to combine", ErrInvalidConfig)
	}
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: limiter %d is nil", ErrInvalidConfig, i)
		}
	}
	return &MaxOfLimiter[K]{limiters: append([]RateLimiter[K](nil), limiters...)}, nil
}

// When implements [RateLimiter]; every limiter records the failure.
func (l *MaxOfLimiter[K]) When(key K) time.Duration {
	var d time.Duration
	for _, r := range l.limiters {
		d = max(d, r.When(key))
	}
	return d
}

// Forget implements [RateLimiter]; every limiter forgets key.
func (l *MaxOfLimiter[K]) Forget(key K) {
	for _, r := range l.limiters {
		r.Forget(key)
	}
}

// NumRequeues implements [RateLimiter]: the largest count of the limiters.
func (l *MaxOfLimiter[K]) NumRequeues(key K) int {
	n := 0
	for _, r := range l.limiters {
		n = max(n, r.NumRequeues(key))
	}
	return n
}

// MaxWaitLimiter caps the delays of another limiter.
type MaxWaitLimiter[K comparable] struct {
	limiter RateLimiter[K]
	max     time.Duration
}

// NewMaxWaitLimiter returns a limiter that delays like limiter but never
// longer than maxWait, which must be positive.
func NewMaxWaitLimiter[K comparable](limiter RateLimiter[K], maxWait time.Duration) (*MaxWaitLimiter[K], error) {
	if limiter == nil {
		return nil, fmt.Errorf("%w: limiter is nil", ErrInvalidConfig)
	}
	if maxWait <= 0 {
		return nil, fmt.Errorf("%w: maxWait %v is not positive", ErrInvalidConfig, maxWait)
	}
	return &MaxWaitLimiter[K]{limiter: limiter, max: maxWait}, nil
}

// When implements [RateLimiter].
func (l *MaxWaitLimiter[K]) When(key K) time.Duration { return min(l.limiter.When(key), l.max) }

// Forget implements [RateLimiter].
func (l *MaxWaitLimiter[K]) Forget(key K) { l.limiter.Forget(key) }

// NumRequeues implements [RateLimiter].
func (l *MaxWaitLimiter[K]) NumRequeues(key K) int { return l.limiter.NumRequeues(key) }

// failures counts consecutive failures per key. A key idle for longer than
// idle counts as forgotten, and a sweep, run at most once per half idle
// period from next, frees such keys, so the map holds only keys that failed
// recently even when the caller never calls Forget.
type failures[K comparable] struct {
	idle time.Duration

	mu    sync.Mutex // guards keys and swept
	keys  map[K]failure
	swept time.Time
}

type failure struct {
	n    int
	last time.Time
}

func newFailures[K comparable](idle time.Duration) failures[K] {
	return failures[K]{idle: idle, keys: make(map[K]failure)}
}

// next records a failure of key and returns how many came before it.
func (f *failures[K]) next(key K) int {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.swept) >= f.idle/2 {
		for k, v := range f.keys {
			if now.Sub(v.last) >= f.idle {
				delete(f.keys, k)
			}
		}
		f.swept = now
	}
	v, ok := f.keys[key]
	if !ok || now.Sub(v.last) >= f.idle {
		v.n = 0
	}
	f.keys[key] = failure{n: v.n + 1, last: now}
	return v.n
}

func (f *failures[K]) forget(key K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, key)
}

func (f *failures[K]) count(key K) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.keys[key]
	if !ok || time.Since(v.last) >= f.idle {
		return 0
	}
	return v.n
}

// named is a configuration duration and its field name, for error messages.
type named struct {
	name string
	d    time.Duration
}

// nonNegative returns an error naming the first negative duration.
func nonNegative(ds ...named) error {
	for _, n := range ds {
		if n.d < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, n.name, n.d)
		}
	}
	return nil
}
