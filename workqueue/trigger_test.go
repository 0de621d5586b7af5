package workqueue

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"
)

// turnQueue is the part of a queue the trigger tests use, so that a defect
// can be planted in a wrapper around a real queue to see the tests catch it.
type turnQueue interface {
	Add(key string)
	AddWithTrigger(key string, t Trigger, opts AddOptions)
	GetTurn(buf []Trigger) (Turn[string], bool)
	Done(key string)
	Len() int
}

// wrapTurns gives the trigger tests their queue: the queue itself.
var wrapTurns = func(q *Queue[string]) turnQueue { return q }

func newTurnQueue(t testing.TB, cfg Config[string]) turnQueue {
	t.Helper()
	q, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(q.ShutDown)
	return wrapTurns(q)
}

func spec(gen int64) Trigger { return Trigger{Kind: "spec", Generation: gen} }

func owned(key string) Trigger {
	return Trigger{Kind: "owned", ObjectKind: "Certificate", ObjectKey: key}
}

// turn takes a key that must be ready and returns its turn.
func turn(t testing.TB, q turnQueue) Turn[string] {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("no key ready")
	}
	tu, shutdown := q.GetTurn(nil)
	if shutdown {
		t.Fatalf("GetTurn reported shutdown")
	}
	return tu
}

// fataler is what wantTurn needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func wantTurn(t fataler, got Turn[string], key string, dropped int, want ...Trigger) {
	t.Helper()
	if got.Key != key || got.Dropped != dropped || !slices.Equal(got.Triggers, want) {
		t.Fatalf("turn = %q %v dropped %d; want %q %v dropped %d", got.Key, got.Triggers, got.Dropped, key, want, dropped)
	}
}

func TestTriggersCoalesceIntoOneTurn(t *testing.T) {
	q := newTurnQueue(t, Config[string]{})
	q.AddWithTrigger("a", spec(1), AddOptions{})
	q.AddWithTrigger("a", owned("ns/c"), AddOptions{})
	q.AddWithTrigger("a", spec(1), AddOptions{}) // equal: kept once
	q.Add("a")                                   // no trigger
	q.AddWithTrigger("a", spec(2), AddOptions{Priority: 3})
	first := turn(t, q)
	wantTurn(t, first, "a", 0, spec(1), owned("ns/c"), spec(2))

	// Adds while a is in flight wait for its next turn.
	q.AddWithTrigger("a", Trigger{Kind: "deleted"}, AddOptions{})
	q.AddWithTrigger("a", spec(2), AddOptions{})
	if q.Len() != 0 {
		t.Fatal("a ready while in flight")
	}
	q.Done("a")
	wantTurn(t, turn(t, q), "a", 0, Trigger{Kind: "deleted"}, spec(2))
	q.Done("a")
	wantTurn(t, first, "a", 0, spec(1), owned("ns/c"), spec(2)) // the first turn's triggers are the worker's

	// A key added without a trigger has a turn without triggers.
	q.Add("b")
	wantTurn(t, turn(t, q), "b", 0)
	q.Done("b")
}

func TestTriggersBounded(t *testing.T) {
	q := newTurnQueue(t, Config[string]{MaxTriggers: 2})
	for g := range int64(5) {
		q.AddWithTrigger("a", spec(g), AddOptions{})
	}
	q.AddWithTrigger("a", spec(1), AddOptions{}) // kept already: merged
	q.AddWithTrigger("a", spec(4), AddOptions{}) // dropped again: counted again
	wantTurn(t, turn(t, q), "a", 4, spec(0), spec(1))
	q.Done("a")
	q.AddWithTrigger("a", spec(9), AddOptions{})
	wantTurn(t, turn(t, q), "a", 0, spec(9)) // the overflow does not carry over
	q.Done("a")
}

func TestPlainGetDropsTriggers(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.AddWithTrigger("a", spec(1), AddOptions{})
	k := get(t, q)
	q.Done(k)
	q.Add("a")
	tu, _ := q.GetTurn(nil)
	wantTurn(t, tu, "a", 0)
}

// Delayed and rate-limited adds carry their trigger to the turn they come due
// in, and not to an earlier one.
func TestTriggersOfDelayedAdds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limiter, _ := NewExponentialLimiter[string](ExponentialConfig{Base: 10 * time.Millisecond})
		q := newTurnQueue(t, Config[string]{RateLimiter: limiter})
		timer := Trigger{Kind: "timer"}
		retry := Trigger{Kind: "retry"}

		q.AddWithTrigger("a", timer, AddOptions{After: 20 * time.Millisecond})
		q.AddWithTrigger("b", spec(1), AddOptions{})
		wantTurn(t, turn(t, q), "b", 0, spec(1))
		q.AddWithTrigger("b", retry, AddOptions{RateLimited: true}) // in flight: due in 10ms
		q.Done("b")
		if q.Len() != 0 {
			t.Fatal("a delayed key is ready early")
		}

		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		wantTurn(t, turn(t, q), "b", 0, retry)
		q.Done("b")

		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		wantTurn(t, turn(t, q), "a", 0, timer)
		// Delayed while in flight: the trigger waits for the deadline,
		// after Done.
		q.AddWithTrigger("a", timer, AddOptions{After: 5 * time.Millisecond})
		q.Done("a")
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		wantTurn(t, turn(t, q), "a", 0, timer)
		q.Done("a")

		// An Add that makes a delayed key ready now takes the delay's
		// trigger into the turn: the queue drops that delay.
		q.AddWithTrigger("c", timer, AddOptions{After: time.Hour})
		q.AddWithTrigger("c", spec(3), AddOptions{})
		wantTurn(t, turn(t, q), "c", 0, timer, spec(3))
		q.Done("c")
	})
}

// triggerModel is the specification of triggers: every add with a trigger
// joins the key's next turn, in order of first add, distinct, bounded.
type triggerModel struct {
	limit   int
	pending map[string]*Turn[string]
	ready   map[string]bool
	working map[string]bool
}

func (m *triggerModel) add(k string, tr Trigger) {
	p := m.pending[k]
	if p == nil {
		p = &Turn[string]{Key: k}
		m.pending[k] = p
	}
	if !m.working[k] {
		m.ready[k] = true
	}
	if tr == (Trigger{}) || slices.Contains(p.Triggers, tr) {
		return
	}
	if len(p.Triggers) == m.limit {
		p.Dropped++
		return
	}
	p.Triggers = append(p.Triggers, tr)
}

// TestTriggersMatchModel coalesces random adds with random triggers, while
// keys wait and while they are in flight, into random turns.
func TestTriggersMatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 4).Draw(t, "limit")
		real, err := New(Config[string]{MaxTriggers: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer real.ShutDown()
		q := wrapTurns(real)
		m := &triggerModel{limit: limit, pending: map[string]*Turn[string]{}, ready: map[string]bool{}, working: map[string]bool{}}
		key := rapid.SampledFrom(modelKeys)
		trig := rapid.SampledFrom([]Trigger{{}, spec(1), spec(2), owned("x"), owned("y"), {Kind: "resync"}})
		var buf []Trigger
		t.Repeat(map[string]func(*rapid.T){
			"Add": func(t *rapid.T) {
				k, tr := key.Draw(t, "key"), trig.Draw(t, "trigger")
				q.AddWithTrigger(k, tr, AddOptions{})
				m.add(k, tr)
			},
			"GetTurn": func(t *rapid.T) {
				if len(m.ready) == 0 {
					t.Skip("nothing ready")
				}
				tu, _ := q.GetTurn(buf[:0])
				want := m.pending[tu.Key]
				if !m.ready[tu.Key] || want == nil {
					t.Fatalf("GetTurn = %q, not ready in the model", tu.Key)
				}
				wantTurn(t, tu, tu.Key, want.Dropped, want.Triggers...)
				buf = tu.Triggers
				delete(m.ready, tu.Key)
				delete(m.pending, tu.Key)
				m.working[tu.Key] = true
			},
			"Done": func(t *rapid.T) {
				k := key.Draw(t, "key")
				q.Done(k)
				if m.working[k] {
					delete(m.working, k)
					if m.pending[k] != nil {
						m.ready[k] = true
					}
				}
			},
		})
	})
}

// A queue without triggers, or with a reused buffer, allocates nothing per
// round trip.
func TestTriggersAllocateNothing(t *testing.T) {
	q := newQueue(t, Config[string]{})
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		q.Add(k)
	}
	if n := roundTripAllocs(q); n != 0 {
		t.Errorf("round trip without triggers: %v allocs, want 0", n)
	}
	var buf []Trigger
	if n := testing.AllocsPerRun(1000, func() {
		tu, _ := q.GetTurn(buf[:0])
		buf = tu.Triggers
		q.Done(tu.Key)
		q.AddWithTrigger(tu.Key, owned(tu.Key), AddOptions{})
		q.AddWithTrigger(tu.Key, spec(1), AddOptions{})
	}); n != 0 {
		t.Errorf("round trip with triggers: %v allocs, want 0", n)
	}
}
