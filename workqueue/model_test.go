package workqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"
)

var modelKeys = []string{"a", "b", "c", "d", "e"}

// orderModel is the specification of ready order, dedup and deferral: a ready
// key has an arrival number and a priority; keys are served by ascending
// arrival − priority × aging, ties to the higher priority.
type orderModel struct {
	aging      int
	arrivals   int
	ready      map[string][2]int // key -> {arrival, priority}
	processing map[string]*int   // key -> priority of a deferred re-add, nil if none
}

func (m *orderModel) before(a, b [2]int) bool {
	pa, pb := a[0]-a[1]*m.aging, b[0]-b[1]*m.aging
	if pa != pb {
		return pa < pb
	}
	return a[1] > b[1]
}

func (m *orderModel) add(k string, prio int) {
	if p, ok := m.processing[k]; ok {
		if p == nil || *p < prio {
			m.processing[k] = &prio
		}
		return
	}
	if r, ok := m.ready[k]; ok {
		if next := [2]int{m.arrivals + 1, prio}; prio > r[1] && m.before(next, r) {
			m.arrivals++
			m.ready[k] = next
		}
		return
	}
	m.arrivals++
	m.ready[k] = [2]int{m.arrivals, prio}
}

// done ends the processing of k, re-adding it if it was added meanwhile, and
// reports whether k was being processed.
func (m *orderModel) done(k string) bool {
	p, ok := m.processing[k]
	if !ok {
		return false // Done of a key not handed out is a no-op
	}
	delete(m.processing, k)
	if p != nil {
		m.add(k, *p)
	}
	return true
}

func (m *orderModel) first() string {
	var best string
	for k, r := range m.ready {
		if best == "" || m.before(r, m.ready[best]) {
			best = k
		}
	}
	return best
}

// TestQueueMatchesOrderModel drives the queue and the model with random adds,
// priorities, Gets and Dones, and checks that the queue hands out exactly
// the key the model says, never a key being processed, and defers re-adds
// until Done.
func TestQueueMatchesOrderModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		aging := rapid.IntRange(1, 4).Draw(t, "aging")
		cfg := Config[string]{PriorityAging: aging}
		if rapid.Bool().Draw(t, "one group") {
			// Priority order holds within a group: one group of every key
			// must serve exactly the order of an ungrouped queue.
			cfg.Group = func(string) string { return "all" }
		}
		q, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer q.ShutDown()
		m := &orderModel{aging: aging, ready: map[string][2]int{}, processing: map[string]*int{}}
		key := rapid.SampledFrom(modelKeys)
		t.Repeat(map[string]func(*rapid.T){
			"Add": func(t *rapid.T) {
				k := key.Draw(t, "key")
				q.Add(k)
				m.add(k, 0)
			},
			"AddWithPriority": func(t *rapid.T) {
				k, p := key.Draw(t, "key"), rapid.IntRange(-2, 2).Draw(t, "priority")
				q.AddWithOptions(k, AddOptions{Priority: p})
				m.add(k, p)
			},
			"Get": func(t *rapid.T) {
				if len(m.ready) == 0 {
					t.Skip("nothing ready")
				}
				want := m.first()
				got, shutdown := q.Get()
				if shutdown || got != want {
					t.Fatalf("Get = %q, %v; want %q", got, shutdown, want)
				}
				delete(m.ready, got)
				m.processing[got] = nil
			},
			"Done": func(t *rapid.T) {
				k := key.Draw(t, "key")
				q.Done(k)
				m.done(k)
			},
			"": func(t *rapid.T) {
				if n := q.Len(); n != len(m.ready) {
					t.Fatalf("Len = %d, model has %d ready", n, len(m.ready))
				}
			},
		})
	})
}

// delayModel is the specification of delays: earliest deadline wins, Add
// makes a delayed key ready now, and a delay expiring during processing
// defers the key until Done.
type delayModel struct {
	now        time.Duration
	ready      map[string]bool
	delayed    map[string]time.Duration
	processing map[string]*time.Duration // deadline pending while processed; 0 means re-added (dirty)
}

func (m *delayModel) add(k string) {
	switch {
	case m.ready[k]:
	case m.processing[k] != nil || hasKey(m.processing, k):
		dirty := time.Duration(0)
		m.processing[k] = &dirty
	default:
		delete(m.delayed, k)
		m.ready[k] = true
	}
}

func (m *delayModel) addAfter(k string, d time.Duration) {
	if d <= 0 {
		m.add(k)
		return
	}
	at := m.now + d
	if m.ready[k] {
		return
	}
	if p, ok := m.processing[k]; ok {
		if p == nil || (*p != 0 && at < *p) {
			m.processing[k] = &at
		}
		return
	}
	if old, ok := m.delayed[k]; !ok || at < old {
		m.delayed[k] = at
	}
}

func (m *delayModel) advance(d time.Duration) {
	m.now += d
	for k, at := range m.delayed {
		if at <= m.now {
			delete(m.delayed, k)
			m.ready[k] = true
		}
	}
	for k, p := range m.processing {
		if p != nil && *p != 0 && *p <= m.now {
			dirty := time.Duration(0)
			m.processing[k] = &dirty
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// TestQueueMatchesDelayModel checks delays against the model in fake time.
func TestQueueMatchesDelayModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			q, err := New(Config[string]{})
			if err != nil {
				t.Fatal(err)
			}
			defer q.ShutDown()
			m := &delayModel{ready: map[string]bool{}, delayed: map[string]time.Duration{}, processing: map[string]*time.Duration{}}
			key := rapid.SampledFrom(modelKeys)
			t.Repeat(map[string]func(*rapid.T){
				"Add": func(t *rapid.T) {
					k := key.Draw(t, "key")
					q.Add(k)
					m.add(k)
				},
				"AddAfter": func(t *rapid.T) {
					k := key.Draw(t, "key")
					d := time.Duration(rapid.IntRange(-1, 5).Draw(t, "ms")) * time.Millisecond
					q.AddAfter(k, d)
					m.addAfter(k, d)
				},
				"Sleep": func(t *rapid.T) {
					d := time.Duration(rapid.IntRange(1, 6).Draw(t, "ms")) * time.Millisecond
					time.Sleep(d)
					synctest.Wait()
					m.advance(d)
				},
				"Get": func(t *rapid.T) {
					if len(m.ready) == 0 {
						t.Skip("nothing ready")
					}
					k, _ := q.Get()
					if !m.ready[k] {
						t.Fatalf("Get = %q, not ready in the model %v", k, m.ready)
					}
					delete(m.ready, k)
					m.processing[k] = nil
				},
				"Done": func(t *rapid.T) {
					k := key.Draw(t, "key")
					q.Done(k)
					p, ok := m.processing[k]
					if !ok {
						return
					}
					delete(m.processing, k)
					switch {
					case p == nil:
					case *p == 0:
						m.ready[k] = true
					default:
						m.delayed[k] = *p
					}
				},
				"": func(t *rapid.T) {
					if n := q.Len(); n != len(m.ready) {
						t.Fatalf("Len = %d, model has ready %v", n, m.ready)
					}
				},
			})
		})
	})
}
