package expectations

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestGateReady(t *testing.T) {
	tests := []struct {
		name      string
		ops       func(g *Gate[string])
		wantReady bool
		wantLen   int
	}{
		{name: "nothing written", ops: func(g *Gate[string]) {}, wantReady: true},
		{
			name:    "cache behind the write",
			ops:     func(g *Gate[string]) { g.Wrote("a", 5); g.Observed(4) },
			wantLen: 1,
		},
		{
			name:      "cache at the write",
			ops:       func(g *Gate[string]) { g.Wrote("a", 5); g.Observed(5) },
			wantReady: true,
		},
		{
			name:      "cache past the write",
			ops:       func(g *Gate[string]) { g.Wrote("a", 5); g.Observed(9) },
			wantReady: true,
		},
		{
			name:    "a lower write does not lower the bar",
			ops:     func(g *Gate[string]) { g.Wrote("a", 5); g.Wrote("a", 3); g.Observed(4) },
			wantLen: 1,
		},
		{
			name:    "a higher write raises the bar",
			ops:     func(g *Gate[string]) { g.Wrote("a", 3); g.Wrote("a", 5); g.Observed(4) },
			wantLen: 1,
		},
		{
			name:      "a write the cache already observed",
			ops:       func(g *Gate[string]) { g.Observed(9); g.Wrote("a", 7) },
			wantReady: true,
		},
		{
			name:      "observed never goes back",
			ops:       func(g *Gate[string]) { g.Observed(5); g.Observed(3); g.Wrote("a", 4) },
			wantReady: true,
		},
		{
			name:      "key observed at the write",
			ops:       func(g *Gate[string]) { g.Wrote("a", 5); g.ObservedKey("a", 5) },
			wantReady: true,
		},
		{
			name:    "key observed before the write",
			ops:     func(g *Gate[string]) { g.Wrote("a", 5); g.ObservedKey("a", 4) },
			wantLen: 1,
		},
		{
			name:    "another key observed",
			ops:     func(g *Gate[string]) { g.Wrote("a", 5); g.ObservedKey("b", 9) },
			wantLen: 1,
		},
		{
			name:      "forgotten",
			ops:       func(g *Gate[string]) { g.Wrote("a", 5); g.Forget("a") },
			wantReady: true,
		},
		{
			name:    "other keys released",
			ops:     func(g *Gate[string]) { g.Wrote("a", 5); g.Wrote("b", 2); g.Observed(3); g.Ready("b") },
			wantLen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Gate[string]
			tt.ops(&g)
			if got := g.Ready("a"); got != tt.wantReady {
				t.Errorf("Ready = %v, want %v", got, tt.wantReady)
			}
			if got := g.Len(); got != tt.wantLen {
				t.Errorf("Len = %d, want %d", got, tt.wantLen)
			}
			// Wait checks readiness before the context: with a cancelled context it returns nil exactly when the
			// key is ready.
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			wantErr := context.Canceled
			if tt.wantReady {
				wantErr = nil
			}
			if err := g.Wait(ctx, "a"); !errors.Is(err, wantErr) {
				t.Errorf("Wait = %v, want %v", err, wantErr)
			}
		})
	}
}

// waitAsync starts Wait in a goroutine and returns a channel with its result.
func waitAsync(ctx context.Context, g *Gate[string], key string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx, key) }()
	return done
}

// returned reports whether the Wait behind done has returned, once every goroutine in the bubble is blocked.
func returned(done <-chan error) (error, bool) {
	synctest.Wait()
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

func TestGateWaitReleasedByObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate[string]
		g.Wrote("a", 5)
		g.Wrote("b", 7)
		a := waitAsync(t.Context(), &g, "a")
		b := waitAsync(t.Context(), &g, "b")
		if _, ok := returned(a); ok {
			t.Fatal("Wait returned before the cache observed anything")
		}
		g.Observed(4)
		if _, ok := returned(a); ok {
			t.Fatal("Wait returned with the cache behind the write")
		}
		g.Observed(5)
		if err, ok := returned(a); !ok || err != nil {
			t.Fatalf("Wait for a = (%v, returned %v), want (nil, true)", err, ok)
		}
		if _, ok := returned(b); ok {
			t.Fatal("Wait for b returned with the cache behind its write")
		}
		g.ObservedKey("b", 7)
		if err, ok := returned(b); !ok || err != nil {
			t.Fatalf("Wait for b = (%v, returned %v), want (nil, true)", err, ok)
		}
	})
}

func TestGateWaitReleasedByForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate[string]
		g.Wrote("a", 5)
		a := waitAsync(t.Context(), &g, "a")
		if _, ok := returned(a); ok {
			t.Fatal("Wait returned early")
		}
		g.Forget("a")
		if err, ok := returned(a); !ok || err != nil {
			t.Fatalf("Wait = (%v, returned %v), want (nil, true)", err, ok)
		}
	})
}

func TestGateWaitContextEnds(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		wantErr error
	}{
		{
			name: "deadline",
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, time.Second)
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name: "cancel",
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(time.Second, cancel)
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g Gate[string]
				g.Wrote("a", 5)
				ctx, cancel := tt.ctx(t.Context())
				defer cancel()
				start := time.Now()
				err := g.Wait(ctx, "a")
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Wait = %v, want %v", err, tt.wantErr)
				}
				if waited := time.Since(start); waited != time.Second {
					t.Fatalf("Wait returned after %v, want 1s", waited)
				}
				if g.Ready("a") || g.Len() != 1 {
					t.Fatalf("Wait changed state: Ready = %v, Len = %d", g.Ready("a"), g.Len())
				}
			})
		})
	}
}

func TestGateMemoryBounded(t *testing.T) {
	var g Gate[int]
	rev := int64(0)
	const perRound = 100
	for round := range 100 {
		for i := range perRound {
			rev++
			g.Wrote(round*perRound+i, rev)
		}
		if n, bound := g.Len(), 2*perRound+minSweep; n > bound {
			t.Fatalf("round %d: Len = %d, want at most %d", round, n, bound)
		}
		g.Observed(rev)
	}
}

// TestGateConcurrent runs writers, waiters and a cache concurrently, for the race detector. It runs in a synctest
// bubble only so that a waiter that is never released fails the test as a deadlock instead of hanging it.
func TestGateConcurrent(t *testing.T) {
	synctest.Test(t, testGateConcurrent)
}

func testGateConcurrent(t *testing.T) {
	var g Gate[int]
	const keys, writes = 8, 100
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex // guards rev
		rev int64
	)
	for k := range keys {
		wg.Go(func() {
			for range writes {
				mu.Lock()
				rev++
				r := rev
				mu.Unlock()
				g.Wrote(k, r)
				g.ObservedKey(k, r-1)
				g.Ready(k)
			}
			if err := g.Wait(t.Context(), k); err != nil {
				t.Error(err)
			}
		})
	}
	// The cache catches up with every write, in order.
	wg.Go(func() {
		for r := int64(1); r <= keys*writes; r++ {
			g.Observed(r)
		}
	})
	wg.Wait()
	for k := range keys {
		if !g.Ready(k) {
			t.Errorf("key %d not ready after the cache caught up", k)
		}
	}
}
