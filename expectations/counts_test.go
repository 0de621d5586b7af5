package expectations

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

const testTTL = time.Minute

func newTestCounts(t *testing.T) (*Counts[string], *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	c, err := NewCounts[string](CountsConfig{TTL: testTTL, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func TestCounts(t *testing.T) {
	tests := []struct {
		name          string
		ops           func(c *Counts[string], clk *fakeClock)
		wantSatisfied bool
		wantAdd       int
		wantDel       int
		wantOK        bool
	}{
		{
			name:          "never set is satisfied",
			ops:           func(c *Counts[string], _ *fakeClock) {},
			wantSatisfied: true,
		},
		{
			name:    "expected creations pending",
			ops:     func(c *Counts[string], _ *fakeClock) { c.ExpectCreations("rs", 2) },
			wantAdd: 2, wantOK: true,
		},
		{
			name: "some creations observed",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 2)
				c.CreationObserved("rs")
			},
			wantAdd: 1, wantOK: true,
		},
		{
			name: "all creations observed",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 2)
				c.CreationObserved("rs")
				c.CreationObserved("rs")
			},
			wantSatisfied: true, wantOK: true,
		},
		{
			name: "more observed than expected goes negative and stays satisfied",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 1)
				c.CreationObserved("rs")
				c.CreationObserved("rs")
			},
			wantSatisfied: true, wantAdd: -1, wantOK: true,
		},
		{
			name: "deletions observed",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectDeletions("rs", 1)
				c.DeletionObserved("rs")
			},
			wantSatisfied: true, wantOK: true,
		},
		{
			name: "creation observed does not meet deletions",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectDeletions("rs", 1)
				c.CreationObserved("rs")
			},
			wantAdd: -1, wantDel: 1, wantOK: true,
		},
		{
			name: "both counts must be met",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.SetExpectations("rs", 1, 1)
				c.CreationObserved("rs")
			},
			wantDel: 1, wantOK: true,
		},
		{
			name:          "negative expectation is already met",
			ops:           func(c *Counts[string], _ *fakeClock) { c.ExpectCreations("rs", -1) },
			wantSatisfied: true, wantAdd: -1, wantOK: true,
		},
		{
			name: "alive at exactly one TTL",
			ops: func(c *Counts[string], clk *fakeClock) {
				c.ExpectCreations("rs", 1)
				clk.Advance(testTTL)
			},
			wantAdd: 1, wantOK: true,
		},
		{
			name: "expired after one TTL",
			ops: func(c *Counts[string], clk *fakeClock) {
				c.ExpectCreations("rs", 1)
				clk.Advance(testTTL + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name: "expecting again replaces counts and restarts the TTL",
			ops: func(c *Counts[string], clk *fakeClock) {
				c.ExpectCreations("rs", 5)
				clk.Advance(testTTL / 2)
				c.ExpectDeletions("rs", 1)
				clk.Advance(testTTL/2 + time.Second)
			},
			wantDel: 1, wantOK: true,
		},
		{
			name: "raising does not restart the TTL",
			ops: func(c *Counts[string], clk *fakeClock) {
				c.ExpectCreations("rs", 1)
				clk.Advance(testTTL / 2)
				c.RaiseExpectations("rs", 1, 0)
				clk.Advance(testTTL/2 + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name: "raising met expectations makes the key wait again",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 1)
				c.CreationObserved("rs")
				c.RaiseExpectations("rs", 1, 2)
			},
			wantAdd: 1, wantDel: 2, wantOK: true,
		},
		{
			name:          "raising a key never set does nothing",
			ops:           func(c *Counts[string], _ *fakeClock) { c.RaiseExpectations("rs", 3, 3) },
			wantSatisfied: true,
		},
		{
			name: "raising an expired key does nothing",
			ops: func(c *Counts[string], clk *fakeClock) {
				c.ExpectCreations("rs", 1)
				clk.Advance(2 * testTTL)
				c.RaiseExpectations("rs", 3, 3)
			},
			wantSatisfied: true,
		},
		{
			name: "lowering meets expectations",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.SetExpectations("rs", 3, 2)
				c.LowerExpectations("rs", 3, 2)
			},
			wantSatisfied: true, wantOK: true,
		},
		{
			name: "an observation before its expectation is dropped",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.CreationObserved("rs")
				c.ExpectCreations("rs", 1)
			},
			wantAdd: 1, wantOK: true,
		},
		{
			name: "deleted expectations are satisfied",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 1)
				c.DeleteExpectations("rs")
			},
			wantSatisfied: true,
		},
		{
			name: "keys are independent",
			ops: func(c *Counts[string], _ *fakeClock) {
				c.ExpectCreations("rs", 1)
				c.ExpectCreations("other", 1)
				c.CreationObserved("other")
				c.DeleteExpectations("other")
			},
			wantAdd: 1, wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newTestCounts(t)
			tt.ops(c, clk)
			if got := c.SatisfiedExpectations("rs"); got != tt.wantSatisfied {
				t.Errorf("SatisfiedExpectations = %v, want %v", got, tt.wantSatisfied)
			}
			add, del, ok := c.Get("rs")
			if add != tt.wantAdd || del != tt.wantDel || ok != tt.wantOK {
				t.Errorf("Get = (%d, %d, %v), want (%d, %d, %v)", add, del, ok, tt.wantAdd, tt.wantDel, tt.wantOK)
			}
		})
	}
}

func TestCountsTTLUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCounts[string](CountsConfig{})
		if err != nil {
			t.Fatal(err)
		}
		c.ExpectCreations("rs", 1)
		time.Sleep(DefaultTTL)
		if c.SatisfiedExpectations("rs") {
			t.Fatal("satisfied at exactly DefaultTTL")
		}
		time.Sleep(time.Nanosecond)
		if !c.SatisfiedExpectations("rs") {
			t.Fatal("not satisfied after DefaultTTL")
		}
		if n := c.Len(); n != 0 {
			t.Fatalf("Len = %d after expiry, want 0", n)
		}
	})
}

// TestCountsMemoryBounded keeps a steady stream of new keys whose expectations are never met nor deleted; the
// expired ones must not accumulate.
func TestCountsMemoryBounded(t *testing.T) {
	c, clk := newTestCounts(t)
	const perRound = 100
	for round := range 100 {
		for i := range perRound {
			c.ExpectCreations(fmt.Sprint(round, "/", i), 1)
		}
		if n, bound := c.Len(), 2*perRound+minSweep; n > bound {
			t.Fatalf("round %d: Len = %d, want at most %d", round, n, bound)
		}
		clk.Advance(testTTL + time.Nanosecond)
	}
}

func TestCountsConcurrent(t *testing.T) {
	c, err := NewCounts[int](CountsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 200
	for key := range 4 {
		c.SetExpectations(key, workers*each, workers*each)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := (w + i) % 4
				c.CreationObserved(key)
				c.SatisfiedExpectations(key)
				c.DeletionObserved(key)
				c.Get(key)
			}
		})
	}
	wg.Wait()
	// Each key received workers*each/4 of each kind of observation.
	for key := range 4 {
		add, del, ok := c.Get(key)
		want := workers*each - workers*each/4
		if !ok || add != want || del != want {
			t.Errorf("key %d: Get = (%d, %d, %v), want (%d, %d, true)", key, add, del, ok, want, want)
		}
	}
}
