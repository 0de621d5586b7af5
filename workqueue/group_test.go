package workqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"pgregory.net/rapid"
)

// tenant groups keys "tenant/name" by tenant.
func tenant(key string) string {
	t, _, _ := strings.Cut(key, "/")
	return t
}

// Groups take turns, each up to its weight in a row.
func TestGroupsServedInTurn(t *testing.T) {
	keys := []string{"a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "b/2", "c/1"}
	tests := []struct {
		name   string
		weight func(string) int
		want   []string
	}{
		{"round robin", nil, []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3", "a/4", "a/5"}},
		{"weighted", func(g string) int { return map[string]int{"a": 3, "c": -1}[g] }, // b 0, c -1: weight 1
			[]string{"a/1", "a/2", "a/3", "b/1", "c/1", "a/4", "a/5", "b/2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue(t, Config[string]{Group: tenant, GroupWeight: tt.weight})
			for _, k := range keys {
				q.Add(k)
			}
			if got := drain(t, q); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// One group's backlog of 10,000 keys delays the keys of nine small groups by
// no more than their fair share: the r-th key of a small group is served
// within r × 10 Gets, every group being owed one Get in ten.
func TestBacklogDoesNotDelayOtherGroups(t *testing.T) {
	q := newQueue(t, Config[string]{Group: tenant})
	for i := range 10_000 {
		q.Add(fmt.Sprintf("big/%d", i))
	}
	fair := map[string]int{}
	for g := range 9 {
		for r := 1; r <= 10; r++ {
			k := fmt.Sprintf("small-%d/%d", g, r)
			q.Add(k)
			fair[k] = r * 10
		}
	}
	for gets := 1; len(fair) > 0; gets++ {
		k := get(t, q)
		q.Done(k)
		if share, ok := fair[k]; ok {
			if gets > share {
				t.Fatalf("%s served at Get %d, beyond its fair share %d", k, gets, share)
			}
			delete(fair, k)
		}
	}
}

func TestPrioritiesWithinGroup(t *testing.T) {
	q := newQueue(t, Config[string]{Group: tenant})
	addPrio(q, "a/low", -1)
	addPrio(q, "a/high", 1)
	q.Add("b/1")
	addPrio(q, "b/2", 5)
	want := []string{"a/high", "b/2", "a/low", "b/1"}
	if got := drain(t, q); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestGroupCapSkipsGroupUntilDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{Group: tenant, MaxInFlightPerGroup: 1})
		q.Add("a/1")
		q.Add("a/2")
		q.Add("b/1")
		if k := get(t, q); k != "a/1" {
			t.Fatalf("first = %q", k)
		}
		if k := get(t, q); k != "b/1" {
			t.Fatalf("second = %q, want b/1: a is at its cap", k)
		}
		got := getLater(q)
		stillWaiting(t, got, "while a/1 is in flight")
		if q.Len() != 1 {
			t.Fatalf("Len = %d, want 1: a/2 is ready, held back by the cap", q.Len())
		}
		q.Done("b/1") // another group's Done does not free a
		stillWaiting(t, got, "after b's Done")
		q.Done("a/1")
		if k := <-got; k != "a/2" {
			t.Fatalf("after Done = %q, want a/2", k)
		}
		q.Done("a/2")
	})
}

// Shutting down does not lose keys held back by a cap: Get waits for the
// cap, and the drain for them.
func TestGroupCapAndShutDownWithDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{Group: tenant, MaxInFlightPerGroup: 1})
		q.Add("a/1")
		q.Add("a/2")
		k := get(t, q)
		drained := make(chan error)
		go func() { drained <- q.ShutDownWithDrain(context.Background()) }()
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				got = append(got, k)
				q.Done(k)
			}
		}()
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("handed out %v while a/1 is in flight", got)
		}
		q.Done(k)
		if err := <-drained; err != nil {
			t.Fatal(err)
		}
		<-done
		if !slices.Equal(got, []string{"a/2"}) {
			t.Fatalf("after shutdown got %v, want [a/2]", got)
		}
	})
}

func TestGroupsFreedWhenEmpty(t *testing.T) {
	q := newQueue(t, Config[string]{Group: tenant})
	for i := range 3 {
		for _, g := range []string{"a", "b", "c"} {
			q.Add(fmt.Sprintf("%s-%d/k", g, i))
		}
		drain(t, q)
	}
	if n := len(q.groups.byName); n != 0 {
		t.Fatalf("%d groups left after every key is done", n)
	}
	if n := len(q.groups.list); n > 3 {
		t.Fatalf("%d groups made for at most 3 at once", n)
	}
}

func TestGroupsRoundTripAllocatesNothing(t *testing.T) {
	q := newQueue(t, Config[string]{Group: tenant, MaxInFlightPerGroup: 2})
	keys := []string{"a/1", "a/2", "b/1", "c/1"}
	for _, k := range keys {
		q.Add(k)
	}
	if n := roundTripAllocs(q); n != 0 {
		t.Errorf("%v allocs per round trip, want 0", n)
	}
}

// fairModel extends orderModel, which orders the ready keys of each group,
// with groups, weights and caps.
type fairModel struct {
	orderModel
	weight   map[string]int
	limit    int            // in-flight cap per group; 0 is none
	inflight map[string]int // keys of the group handed out and not Done
	waited   map[string]int // Gets that served other groups while the group stayed servable
}

func (m *fairModel) servable(g string) bool {
	if m.limit > 0 && m.inflight[g] >= m.limit {
		return false
	}
	for k := range m.ready {
		if tenant(k) == g {
			return true
		}
	}
	return false
}

// firstOf is the key of group g served next.
func (m *fairModel) firstOf(g string) string {
	var best string
	for k, r := range m.ready {
		if tenant(k) == g && (best == "" || m.before(r, m.ready[best])) {
			best = k
		}
	}
	return best
}

// othersWeight is the bound on Gets that go to other groups while g waits,
// servable: each other group is served at most its weight before g's turn.
func (m *fairModel) othersWeight(g string) int {
	n := 0
	for h, w := range m.weight {
		if h != g {
			n += w
		}
	}
	return n
}

// wrapGroup gives the fairness test the group function of its queue: the
// model's own.
var wrapGroup = func(f func(string) string) func(string) string { return f }

// TestFairnessProperties drives a grouped queue with random group sizes,
// weights, priorities, caps, Gets and Dones, and checks at every step that
//   - the key served is the one its group's priority order says,
//   - no group holds more than the cap in flight, and Get can serve exactly
//     when some group has a ready key under the cap,
//   - no group starves: while a group stays servable, the other groups are
//     served at most the sum of their weights before it is.
func TestFairnessProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ngroups := rapid.IntRange(1, 4).Draw(t, "groups")
		aging := rapid.IntRange(1, 4).Draw(t, "aging")
		limit := rapid.IntRange(0, 2).Draw(t, "cap")
		weighted := rapid.Bool().Draw(t, "weighted")
		m := &fairModel{
			orderModel: orderModel{aging: aging, ready: map[string][2]int{}, processing: map[string]*int{}},
			weight:     map[string]int{}, limit: limit, inflight: map[string]int{}, waited: map[string]int{},
		}
		var keys []string
		for g := range ngroups {
			name := fmt.Sprintf("g%d", g)
			m.weight[name] = 1
			if weighted {
				m.weight[name] = rapid.IntRange(1, 3).Draw(t, "weight")
			}
			for k := range rapid.IntRange(1, 8).Draw(t, "size") {
				keys = append(keys, fmt.Sprintf("%s/%d", name, k))
			}
		}
		cfg := Config[string]{Group: wrapGroup(tenant), PriorityAging: aging, MaxInFlightPerGroup: limit}
		if weighted {
			cfg.GroupWeight = func(g string) int { return m.weight[g] }
		}
		q, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer q.ShutDown()
		key := rapid.SampledFrom(keys)
		t.Repeat(map[string]func(*rapid.T){
			"Add": func(t *rapid.T) {
				k, p := key.Draw(t, "key"), rapid.IntRange(-2, 2).Draw(t, "priority")
				q.AddWithOptions(k, AddOptions{Priority: p})
				m.add(k, p)
			},
			"Get": func(t *rapid.T) {
				var servable []string
				for g := range m.weight {
					if m.servable(g) {
						servable = append(servable, g)
					}
				}
				if len(servable) == 0 {
					t.Skip("nothing servable")
				}
				got, _ := q.Get()
				g := tenant(got)
				if !slices.Contains(servable, g) {
					t.Fatalf("Get = %q of group %s, which is not servable (in flight %v)", got, g, m.inflight)
				}
				if want := m.firstOf(g); got != want {
					t.Fatalf("Get = %q, want %q: first of its group", got, want)
				}
				for _, h := range servable {
					if h == g {
						m.waited[h] = 0
					} else if m.waited[h]++; m.waited[h] > m.othersWeight(h) {
						t.Fatalf("group %s waited %d Gets, servable, beyond the other groups' weights %d",
							h, m.waited[h], m.othersWeight(h))
					}
				}
				delete(m.ready, got)
				m.processing[got] = nil
				if m.inflight[g]++; limit > 0 && m.inflight[g] > limit {
					t.Fatalf("group %s has %d keys in flight, cap %d", g, m.inflight[g], limit)
				}
			},
			"Done": func(t *rapid.T) {
				k := key.Draw(t, "key")
				q.Done(k)
				if m.done(k) {
					m.inflight[tenant(k)]--
				}
			},
			"": func(t *rapid.T) {
				any := false
				for g := range m.weight {
					if m.servable(g) {
						any = true
					} else {
						m.waited[g] = 0 // it left the line: its wait starts over
					}
				}
				q.mu.Lock()
				got := q.servable()
				q.mu.Unlock()
				if got != any {
					t.Fatalf("queue servable = %v, model %v", got, any)
				}
				if n := q.Len(); n != len(m.ready) {
					t.Fatalf("Len = %d, model has %d ready", n, len(m.ready))
				}
			},
		})
	})
}
