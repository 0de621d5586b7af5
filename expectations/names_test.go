package expectations

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func newTestNames(t *testing.T) (*Names[string, string], *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	n, err := NewNames[string, string](NamesConfig{TTL: testTTL, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return n, clk
}

func TestNames(t *testing.T) {
	tests := []struct {
		name          string
		ops           func(n *Names[string, string], clk *fakeClock)
		wantSatisfied bool
		wantAdd       []string
		wantDel       []string
	}{
		{
			name:          "never set is satisfied",
			ops:           func(n *Names[string, string], _ *fakeClock) {},
			wantSatisfied: true,
		},
		{
			name:          "expecting no names is satisfied",
			ops:           func(n *Names[string, string], _ *fakeClock) { n.ExpectCreations("c") },
			wantSatisfied: true,
		},
		{
			name:    "expected creations pending",
			ops:     func(n *Names[string, string], _ *fakeClock) { n.ExpectCreations("c", "m4", "m5") },
			wantAdd: []string{"m4", "m5"},
		},
		{
			name: "observed name removed",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4", "m5")
				n.CreationObserved("c", "m4")
			},
			wantAdd: []string{"m5"},
		},
		{
			name: "all names observed",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4", "m5")
				n.CreationObserved("c", "m5")
				n.CreationObserved("c", "m4")
			},
			wantSatisfied: true,
		},
		{
			name: "an unexpected name is a no-op",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4")
				n.CreationObserved("c", "m9")
				n.CreationObserved("other", "m4")
			},
			wantAdd: []string{"m4"},
		},
		{
			name: "an observed name counts once",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4", "m5")
				n.CreationObserved("c", "m4")
				n.CreationObserved("c", "m4")
			},
			wantAdd: []string{"m5"},
		},
		{
			name: "a creation does not meet a deletion of the same name",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectDeletions("c", "m3")
				n.CreationObserved("c", "m3")
			},
			wantDel: []string{"m3"},
		},
		{
			name: "deletion observed",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectDeletions("c", "m3")
				n.DeletionObserved("c", "m3")
			},
			wantSatisfied: true,
		},
		{
			name: "replace a member: both directions pending",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectDeletions("c", "m3")
				n.ExpectCreations("c", "m6")
				n.DeletionObserved("c", "m3")
			},
			wantAdd: []string{"m6"},
		},
		{
			name: "expecting more adds to the set",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4")
				n.ExpectCreations("c", "m5")
			},
			wantAdd: []string{"m4", "m5"},
		},
		{
			name: "alive at exactly one TTL",
			ops: func(n *Names[string, string], clk *fakeClock) {
				n.ExpectCreations("c", "m4")
				clk.Advance(testTTL)
			},
			wantAdd: []string{"m4"},
		},
		{
			name: "expired after one TTL",
			ops: func(n *Names[string, string], clk *fakeClock) {
				n.ExpectCreations("c", "m4")
				clk.Advance(testTTL + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name: "each name expires on its own",
			ops: func(n *Names[string, string], clk *fakeClock) {
				n.ExpectCreations("c", "m4")
				clk.Advance(testTTL / 2)
				n.ExpectCreations("c", "m5")
				clk.Advance(testTTL/2 + time.Nanosecond)
			},
			wantAdd: []string{"m5"},
		},
		{
			name: "expecting a name again restarts its TTL",
			ops: func(n *Names[string, string], clk *fakeClock) {
				n.ExpectCreations("c", "m4")
				clk.Advance(testTTL / 2)
				n.ExpectCreations("c", "m4")
				clk.Advance(testTTL/2 + time.Nanosecond)
			},
			wantAdd: []string{"m4"},
		},
		{
			name: "an observation before its expectation is dropped",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.CreationObserved("c", "m4")
				n.ExpectCreations("c", "m4")
			},
			wantAdd: []string{"m4"},
		},
		{
			name: "deleted expectations are satisfied",
			ops: func(n *Names[string, string], _ *fakeClock) {
				n.ExpectCreations("c", "m4")
				n.ExpectDeletions("c", "m1")
				n.DeleteExpectations("c")
			},
			wantSatisfied: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, clk := newTestNames(t)
			tt.ops(n, clk)
			if got := n.SatisfiedExpectations("c"); got != tt.wantSatisfied {
				t.Errorf("SatisfiedExpectations = %v, want %v", got, tt.wantSatisfied)
			}
			add, del := n.Pending("c")
			slices.Sort(add)
			slices.Sort(del)
			if !slices.Equal(add, tt.wantAdd) || !slices.Equal(del, tt.wantDel) {
				t.Errorf("Pending = (%q, %q), want (%q, %q)", add, del, tt.wantAdd, tt.wantDel)
			}
			if tt.wantSatisfied && n.Len() != 0 {
				t.Errorf("Len = %d for a satisfied key, want 0", n.Len())
			}
		})
	}
}

func TestNamesGenericID(t *testing.T) {
	type cluster struct{ ns, name string }
	n, err := NewNames[cluster, uint64](NamesConfig{})
	if err != nil {
		t.Fatal(err)
	}
	key := cluster{"prod", "etcd"}
	n.ExpectCreations(key, 4, 5)
	n.CreationObserved(key, 4)
	n.CreationObserved(cluster{"dev", "etcd"}, 5)
	if n.SatisfiedExpectations(key) {
		t.Fatal("satisfied with member 5 pending")
	}
	n.CreationObserved(key, 5)
	if !n.SatisfiedExpectations(key) {
		t.Fatal("not satisfied after members 4 and 5")
	}
}

func TestNamesTTLUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, err := NewNames[string, string](NamesConfig{})
		if err != nil {
			t.Fatal(err)
		}
		n.ExpectCreations("c", "m4")
		time.Sleep(3 * time.Minute)
		n.ExpectCreations("c", "m5")
		time.Sleep(2*time.Minute + time.Nanosecond)
		if add, _ := n.Pending("c"); !slices.Equal(add, []string{"m5"}) {
			t.Fatalf("Pending creations = %q, want [m5]", add)
		}
		time.Sleep(3 * time.Minute)
		if !n.SatisfiedExpectations("c") {
			t.Fatal("not satisfied after every name expired")
		}
		if l := n.Len(); l != 0 {
			t.Fatalf("Len = %d after expiry, want 0", l)
		}
	})
}

func TestNamesMemoryBounded(t *testing.T) {
	n, clk := newTestNames(t)
	const perRound = 100
	for round := range 100 {
		for i := range perRound {
			n.ExpectCreations(fmt.Sprint(round, "/", i), "a", "b")
		}
		if l, bound := n.Len(), 2*perRound+minSweep; l > bound {
			t.Fatalf("round %d: Len = %d, want at most %d", round, l, bound)
		}
		clk.Advance(testTTL + time.Nanosecond)
	}
}

func TestNamesConcurrent(t *testing.T) {
	n, err := NewNames[int, string](NamesConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprint(w, "/", i)
				n.ExpectCreations(i%4, name)
				n.SatisfiedExpectations(i % 4)
				n.Pending(i % 4)
				n.CreationObserved(i%4, name)
			}
		})
	}
	wg.Wait()
	for key := range 4 {
		if !n.SatisfiedExpectations(key) {
			add, _ := n.Pending(key)
			t.Errorf("key %d not satisfied, pending %q", key, add)
		}
	}
	if l := n.Len(); l != 0 {
		t.Errorf("Len = %d, want 0", l)
	}
}
