package workqueue

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func whens(l RateLimiter[string], key string, n int) []time.Duration {
	var ds []time.Duration
	for range n {
		ds = append(ds, l.When(key))
	}
	return ds
}

func TestExponentialLimiter(t *testing.T) {
	l, err := NewExponentialLimiter[string](ExponentialConfig{Base: time.Millisecond, Max: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	if got, want := whens(l, "a", 6), []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms, 10 * ms}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if got := l.When("b"); got != ms {
		t.Fatalf("another key starts at %v, want 1ms", got)
	}
	if n := l.NumRequeues("a"); n != 6 {
		t.Fatalf("NumRequeues = %d, want 6", n)
	}
	l.Forget("a")
	if n := l.NumRequeues("a"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", n)
	}
	if got := l.When("a"); got != ms {
		t.Fatalf("after Forget the delay is %v, want 1ms", got)
	}
}

func TestExponentialLimiterDoesNotOverflow(t *testing.T) {
	l, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Hour, Max: 1 << 62})
	var last time.Duration
	for i := range 100 {
		d := l.When("a")
		if d < last || d <= 0 {
			t.Fatalf("failure %d: delay %v after %v", i, d, last)
		}
		last = d
	}
}

func TestExponentialLimiterDefaults(t *testing.T) {
	l, _ := NewExponentialLimiter[string](ExponentialConfig{})
	if l.base != 5*time.Millisecond || l.max != 1000*time.Second || l.failures.idle != 2000*time.Second {
		t.Fatalf("defaults: base %v max %v idle %v", l.base, l.max, l.failures.idle)
	}
}

func TestFastSlowLimiter(t *testing.T) {
	l, err := NewFastSlowLimiter[string](FastSlowConfig{Fast: time.Millisecond, Slow: time.Second, FastAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := whens(l, "a", 4), []time.Duration{time.Millisecond, time.Millisecond, time.Second, time.Second}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if n := l.NumRequeues("a"); n != 4 {
		t.Fatalf("NumRequeues = %d, want 4", n)
	}
	l.Forget("a")
	if got := l.When("a"); got != time.Millisecond {
		t.Fatalf("after Forget the delay is %v, want 1ms", got)
	}
}

func TestTokenBucketLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := NewTokenBucketLimiter[string](TokenBucketConfig{QPS: 10, Burst: 2})
		if err != nil {
			t.Fatal(err)
		}
		ms := time.Millisecond
		if got, want := whens(l, "a", 5), []time.Duration{0, 0, 100 * ms, 200 * ms, 300 * ms}; !slices.Equal(got, want) {
			t.Fatalf("delays %v, want %v", got, want)
		}
		time.Sleep(time.Second) // refills 10 tokens, capped at the burst, minus 3 owed
		if got, want := whens(l, "b", 3), []time.Duration{0, 0, 100 * ms}; !slices.Equal(got, want) {
			t.Fatalf("delays after a second %v, want %v", got, want)
		}
		if n := l.NumRequeues("a"); n != 0 {
			t.Fatalf("NumRequeues = %d, want 0", n)
		}
	})
}

func TestMaxOfLimiter(t *testing.T) {
	fast, _ := NewFastSlowLimiter[string](FastSlowConfig{Fast: time.Millisecond, Slow: time.Hour, FastAttempts: 1})
	exp, _ := NewExponentialLimiter[string](ExponentialConfig{Base: 10 * time.Millisecond, Max: time.Minute})
	l, err := NewMaxOfLimiter[string](fast, exp)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := whens(l, "a", 2), []time.Duration{10 * time.Millisecond, time.Hour}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if n := l.NumRequeues("a"); n != 2 {
		t.Fatalf("NumRequeues = %d, want 2", n)
	}
	l.Forget("a")
	if fast.NumRequeues("a") != 0 || exp.NumRequeues("a") != 0 {
		t.Fatal("Forget did not reach every limiter")
	}
}

func TestMaxWaitLimiter(t *testing.T) {
	exp, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Hour})
	l, err := NewMaxWaitLimiter[string](exp, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := whens(l, "a", 4), []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if n := l.NumRequeues("a"); n != 4 {
		t.Fatalf("NumRequeues = %d, want 4", n)
	}
	l.Forget("a")
	if n := l.NumRequeues("a"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", n)
	}
}

func TestDefaultControllerRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := DefaultControllerRateLimiter[string]()
		// Per key: 5 ms, 10 ms, 20 ms ...
		if got, want := whens(l, "a", 3), []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}; !slices.Equal(got, want) {
			t.Fatalf("delays %v, want %v", got, want)
		}
		// Overall: the burst of 100 is spent (3 above), then 10 per second.
		for i := range 97 {
			l.When(fmt.Sprint(i))
		}
		if got := l.When("fresh"); got != 100*time.Millisecond {
			t.Fatalf("after the burst a fresh key waits %v, want 100ms", got)
		}
		// The per-key backoff caps at 1000 s.
		for range 30 {
			l.When("a")
		}
		if got := l.When("a"); got != 1000*time.Second {
			t.Fatalf("long-failing key waits %v, want 1000s", got)
		}
	})
}

func TestIdleKeysAreEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Millisecond, Max: time.Second, IdleTimeout: time.Minute})
		for i := range 1000 {
			l.When(fmt.Sprint(i)) // never forgotten
		}
		l.When("a")
		l.When("a")
		time.Sleep(time.Minute)
		if n := l.NumRequeues("a"); n != 0 {
			t.Fatalf("NumRequeues of an idle key = %d, want 0", n)
		}
		if got := l.When("a"); got != time.Millisecond {
			t.Fatalf("idle key restarts at %v, want 1ms", got)
		}
		l.failures.mu.Lock()
		n := len(l.failures.keys)
		l.failures.mu.Unlock()
		if n != 1 {
			t.Fatalf("limiter holds %d keys after the idle timeout, want 1", n)
		}
	})
}

func TestActiveKeysAreNotEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := NewFastSlowLimiter[string](FastSlowConfig{IdleTimeout: time.Minute})
		for range 10 {
			l.When("a")
			time.Sleep(50 * time.Second)
		}
		if n := l.NumRequeues("a"); n != 10 {
			t.Fatalf("NumRequeues = %d, want 10", n)
		}
	})
}

func TestRateLimiterConfigValidation(t *testing.T) {
	exp, _ := NewExponentialLimiter[string](ExponentialConfig{})
	tests := []struct {
		name string
		new  func() error
	}{
		{"exponential negative base", func() error {
			_, err := NewExponentialLimiter[string](ExponentialConfig{Base: -1})
			return err
		}},
		{"exponential negative max", func() error {
			_, err := NewExponentialLimiter[string](ExponentialConfig{Max: -1})
			return err
		}},
		{"exponential negative idle", func() error {
			_, err := NewExponentialLimiter[string](ExponentialConfig{IdleTimeout: -1})
			return err
		}},
		{"exponential max below base", func() error {
			_, err := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Millisecond})
			return err
		}},
		{"fast-slow negative fast", func() error {
			_, err := NewFastSlowLimiter[string](FastSlowConfig{Fast: -1})
			return err
		}},
		{"fast-slow negative attempts", func() error {
			_, err := NewFastSlowLimiter[string](FastSlowConfig{FastAttempts: -1})
			return err
		}},
		{"fast-slow slow below fast", func() error {
			_, err := NewFastSlowLimiter[string](FastSlowConfig{Fast: time.Minute, Slow: time.Second})
			return err
		}},
		{"bucket negative qps", func() error {
			_, err := NewTokenBucketLimiter[string](TokenBucketConfig{QPS: -1})
			return err
		}},
		{"bucket negative burst", func() error {
			_, err := NewTokenBucketLimiter[string](TokenBucketConfig{Burst: -1})
			return err
		}},
		{"max-of empty", func() error {
			_, err := NewMaxOfLimiter[string]()
			return err
		}},
		{"max-of nil", func() error {
			_, err := NewMaxOfLimiter[string](exp, nil)
			return err
		}},
		{"max-wait nil", func() error {
			_, err := NewMaxWaitLimiter[string](nil, time.Second)
			return err
		}},
		{"max-wait zero", func() error {
			_, err := NewMaxWaitLimiter[string](exp, 0)
			return err
		}},
		{"max-wait negative", func() error {
			_, err := NewMaxWaitLimiter[string](exp, -time.Second)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.new(); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}
