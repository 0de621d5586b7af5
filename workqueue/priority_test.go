package workqueue

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func addPrio(q *Queue[string], key string, prio int) {
	q.AddWithOptions(key, AddOptions{Priority: prio})
}

func TestHigherPriorityFirst(t *testing.T) {
	q := newQueue(t, Config[string]{})
	addPrio(q, "low", -1)
	addPrio(q, "normal", 0)
	addPrio(q, "high", 5)
	if got := drain(t, q); !slices.Equal(got, []string{"high", "normal", "low"}) {
		t.Fatalf("got %v, want [high normal low]", got)
	}
}

func TestFIFOWithinPriority(t *testing.T) {
	q := newQueue(t, Config[string]{})
	var want []string
	for i := range 20 {
		k := fmt.Sprint(i)
		addPrio(q, k, 3)
		want = append(want, k)
	}
	if got := drain(t, q); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestPriorityClamped(t *testing.T) {
	q := newQueue(t, Config[string]{PriorityAging: 1})
	addPrio(q, "min", -1<<40)
	addPrio(q, "max", 1<<40)
	if got := drain(t, q); !slices.Equal(got, []string{"max", "min"}) {
		t.Fatalf("got %v, want [max min]", got)
	}
}

func TestReaddRaisesPriority(t *testing.T) {
	q := newQueue(t, Config[string]{})
	addPrio(q, "a", -1)
	addPrio(q, "b", 0)
	addPrio(q, "a", 1)  // raised above b
	addPrio(q, "b", -5) // lowering is ignored
	if got := drain(t, q); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v, want [a b]", got)
	}
}

func TestRaiseGoesToTailOfNewLevel(t *testing.T) {
	q := newQueue(t, Config[string]{})
	addPrio(q, "h1", 1)
	addPrio(q, "a", 0)
	addPrio(q, "h2", 1)
	addPrio(q, "a", 1)
	if got := drain(t, q); !slices.Equal(got, []string{"h1", "h2", "a"}) {
		t.Fatalf("got %v, want [h1 h2 a]", got)
	}
}

func TestPlainAddRaisesLowPriorityKey(t *testing.T) {
	q := newQueue(t, Config[string]{})
	addPrio(q, "resync", -100)
	q.Add("other")
	q.Add("resync")
	if got := drain(t, q); !slices.Equal(got, []string{"other", "resync"}) {
		t.Fatalf("got %v, want [other resync]", got)
	}
}

func TestDeferredKeyKeepsHighestPriority(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	k := get(t, q)
	addPrio(q, "a", 2)
	q.Add("a")
	q.Add("b")
	q.Done(k)
	if got := drain(t, q); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v, want [a b]", got)
	}
}

func TestDelayedKeyReadyAtItsPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.AddWithOptions("a", AddOptions{After: time.Second, Priority: 1})
		q.Add("b")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := drain(t, q); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("got %v, want [a b]", got)
		}
	})
}

// TestAgingPreventsStarvation keeps a steady load of high-priority keys and
// checks that a low-priority key is served after exactly d × aging of them
// arrived after it, as Config.PriorityAging promises.
func TestAgingPreventsStarvation(t *testing.T) {
	for _, tt := range []struct{ aging, low, high int }{
		{aging: 1, low: -1, high: 0},
		{aging: 4, low: 0, high: 3},
		{aging: DefaultPriorityAging, low: -1, high: 0},
	} {
		t.Run(fmt.Sprintf("aging=%d,d=%d", tt.aging, tt.high-tt.low), func(t *testing.T) {
			q := newQueue(t, Config[string]{PriorityAging: tt.aging})
			addPrio(q, "low", tt.low)
			bound := (tt.high - tt.low) * tt.aging
			overtook := 0
			for i := 0; ; i++ {
				// One high-priority key arrives before each Get: the queue
				// is never free of high-priority work.
				addPrio(q, fmt.Sprint("high-", i), tt.high)
				k := get(t, q)
				q.Done(k)
				if k == "low" {
					break
				}
				overtook++
				if overtook > bound {
					t.Fatalf("low-priority key overtaken more than %d times", bound)
				}
			}
			if overtook != bound {
				t.Fatalf("low-priority key overtaken %d times, want exactly %d", overtook, bound)
			}
		})
	}
}
