package workqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func newQueue(t *testing.T, cfg Config[string]) *Queue[string] {
	t.Helper()
	q, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(q.ShutDown)
	return q
}

// get takes a key that must be ready, without blocking.
func get(t *testing.T, q *Queue[string]) string {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("no key ready")
	}
	k, shutdown := q.Get()
	if shutdown {
		t.Fatalf("Get reported shutdown")
	}
	return k
}

// getLater calls Get in a goroutine and delivers the key it returns.
func getLater(q *Queue[string]) <-chan string {
	got := make(chan string, 1)
	go func() {
		k, _ := q.Get()
		got <- k
	}()
	return got
}

// stillWaiting lets the goroutines of the synctest bubble block, and fails
// if the Get of getLater has returned.
func stillWaiting(t *testing.T, got <-chan string, why string) {
	t.Helper()
	synctest.Wait()
	select {
	case k := <-got:
		t.Fatalf("Get returned %q %s", k, why)
	default:
	}
}

// roundTripAllocs returns the allocations of one Get, Done and Add of the
// keys queued in q.
func roundTripAllocs(q *Queue[string]) float64 {
	return testing.AllocsPerRun(1000, func() {
		k, _ := q.Get()
		q.Done(k)
		q.Add(k)
	})
}

// drain takes and finishes every ready key, in order.
func drain(t *testing.T, q *Queue[string]) []string {
	t.Helper()
	var got []string
	for q.Len() > 0 {
		k := get(t, q)
		q.Done(k)
		got = append(got, k)
	}
	return got
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config[string]
	}{
		{"negative aging", Config[string]{PriorityAging: -1}},
		{"aging too large", Config[string]{PriorityAging: maxPriorityAging + 1}},
		{"metrics without name", Config[string]{Metrics: &provider{}}},
		{"negative MaxTriggers", Config[string]{MaxTriggers: -1}},
		{"negative MaxInFlightPerGroup", Config[string]{Group: tenant, MaxInFlightPerGroup: -1}},
		{"GroupWeight without Group", Config[string]{GroupWeight: func(string) int { return 2 }}},
		{"MaxInFlightPerGroup without Group", Config[string]{MaxInFlightPerGroup: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New: got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestNewDoesNotMutateConfig(t *testing.T) {
	cfg := Config[string]{Name: "q"}
	q := newQueue(t, cfg)
	if cfg.Name != "q" || cfg.RateLimiter != nil || cfg.PriorityAging != 0 || cfg.MaxTriggers != 0 {
		t.Fatalf("config changed to %+v", cfg)
	}
	if q.limiter == nil || q.aging != DefaultPriorityAging {
		t.Fatalf("defaults not applied: limiter %v, aging %d", q.limiter, q.aging)
	}
}

func TestDuplicatesCollapse(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if got := drain(t, q); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v, want [a b]", got)
	}
}

func TestKeyNotHandedToTwoWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.Add("a")
		k := get(t, q)
		q.Add("a")
		got := getLater(q)
		stillWaiting(t, got, "to a second worker while the first still processes it")
		q.Done(k)
		if k := <-got; k != "a" {
			t.Fatalf("second worker got %q, want a", k)
		}
		q.Done("a")
	})
}

func TestReaddWhileProcessingQueuedOnceAfterDone(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	k := get(t, q)
	q.Add("a")
	q.Add("a")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len while processing = %d, want 0", n)
	}
	q.Done(k)
	if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("got %v, want [a]", got)
	}
}

func TestDoneOfKeyNeverHandedOutIsNoop(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Done("ghost")
	q.Add("a")
	q.Done("a") // queued, not handed out
	if n := q.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
	k := get(t, q)
	q.Done(k)
	q.Done(k) // second Done
	if n := q.Len(); n != 0 {
		t.Fatalf("Len after double Done = %d, want 0", n)
	}
}

func TestGetWaitsForAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		got := getLater(q)
		stillWaiting(t, got, "from an empty queue")
		q.Add("a")
		if k := <-got; k != "a" {
			t.Fatalf("got %q, want a", k)
		}
	})
}

func TestAddAfterEarliestDeadlineWins(t *testing.T) {
	for _, order := range [][]time.Duration{{time.Second, 3 * time.Second}, {3 * time.Second, time.Second}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, Config[string]{})
				for _, d := range order {
					q.AddAfter("a", d)
				}
				time.Sleep(time.Second - time.Nanosecond)
				synctest.Wait()
				if n := q.Len(); n != 0 {
					t.Fatalf("ready before the earliest deadline: Len %d", n)
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
					t.Fatalf("at the earliest deadline got %v, want [a]", got)
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if n := q.Len(); n != 0 {
					t.Fatalf("the later deadline fired too: Len %d", n)
				}
			})
		})
	}
}

func TestAddMakesDelayedKeyReadyAndDropsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.AddAfter("a", time.Minute)
		q.Add("a")
		if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("got %v, want [a] at once", got)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := q.Len(); n != 0 {
			t.Fatalf("the dropped delay fired: Len %d", n)
		}
	})
}

func TestAddAfterNonPositiveIsAdd(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		q := newQueue(t, Config[string]{})
		q.AddAfter("a", d)
		if n := q.Len(); n != 1 {
			t.Fatalf("AddAfter(%v): Len %d, want 1", d, n)
		}
	}
}

func TestAddAfterOnReadyKeyChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.Add("a")
		q.AddAfter("a", time.Second)
		if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("got %v, want [a]", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := q.Len(); n != 0 {
			t.Fatalf("Len %d after the ignored delay, want 0", n)
		}
	})
}

func TestAddAfterWhileProcessing(t *testing.T) {
	t.Run("expires during processing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Config[string]{})
			q.Add("a")
			k := get(t, q)
			q.AddAfter("a", time.Second)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			if n := q.Len(); n != 0 {
				t.Fatalf("Len %d while processing, want 0", n)
			}
			q.Done(k)
			if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("got %v after Done, want [a]", got)
			}
		})
	})
	t.Run("expires after Done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Config[string]{})
			q.Add("a")
			k := get(t, q)
			q.AddAfter("a", time.Second)
			q.Done(k)
			synctest.Wait()
			if n := q.Len(); n != 0 {
				t.Fatalf("Len %d before the deadline, want 0", n)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("got %v at the deadline, want [a]", got)
			}
		})
	})
}

func TestDelayedKeysComeOutInDeadlineOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		want := make([]string, 50)
		for i := range want {
			want[i] = fmt.Sprint(i)
		}
		for _, i := range []int{7, 3, 49, 0, 21} {
			q.AddAfter(want[i], time.Duration(i+1)*time.Millisecond)
		}
		for i := range want {
			q.AddAfter(want[i], time.Duration(i+1)*time.Millisecond)
		}
		var got []string
		for range want {
			k, _ := q.Get()
			got = append(got, k)
			q.Done(k)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// TestManyKeysDueAtOnce checks that when more keys fall due at once than the
// timer moves in one batch, all of them become ready, and that workers
// waiting in Get are woken for them.
func TestManyKeysDueAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		n := 10*promoteBatch + 5
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprint(i)
			q.AddAfter(want[i], time.Millisecond)
		}
		slices.Sort(want)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := q.Len(); got != n {
			t.Fatalf("Len = %d after the deadline passed, want %d", got, n)
		}
		got := drain(t, q)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}

		taken := make(chan string, n)
		for range 2 {
			go func() {
				for {
					k, shutdown := q.Get()
					if shutdown {
						return
					}
					taken <- k
					q.Done(k)
				}
			}()
		}
		synctest.Wait() // both workers wait
		for _, k := range want {
			q.AddAfter(k, time.Second)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(taken) != n {
			t.Fatalf("waiting workers took %d of %d keys due at once", len(taken), n)
		}
		q.ShutDown()
	})
}

func TestAddRateLimitedFollowsLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp, err := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		q := newQueue(t, Config[string]{RateLimiter: exp})
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			start := time.Now()
			q.AddRateLimited("a")
			k, _ := q.Get()
			if waited := time.Since(start); waited != want {
				t.Fatalf("retry %d waited %v, want %v", i, waited, want)
			}
			q.Done(k)
		}
		if n := q.NumRequeues("a"); n != 3 {
			t.Fatalf("NumRequeues = %d, want 3", n)
		}
		q.Forget("a")
		if n := q.NumRequeues("a"); n != 0 {
			t.Fatalf("NumRequeues after Forget = %d, want 0", n)
		}
	})
}

func TestAddWithOptionsShorterDelayWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Hour})
		q := newQueue(t, Config[string]{RateLimiter: exp})
		start := time.Now()
		q.AddWithOptions("a", AddOptions{After: time.Minute, RateLimited: true})
		k, _ := q.Get()
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("waited %v, want 1s (rate limiter shorter than After)", waited)
		}
		q.Done(k)
	})
}

func TestShutDownIgnoresAddsAndDrainsGet(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	q.Add("b")
	q.AddAfter("c", time.Hour)
	q.ShutDown()
	q.Add("d")
	q.AddAfter("e", time.Millisecond)
	q.AddRateLimited("f")
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown = false")
	}
	var got []string
	for {
		k, shutdown := q.Get()
		if shutdown {
			break
		}
		got = append(got, k)
		q.Done(k)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v, want [a b]", got)
	}
	q.ShutDown() // a second call is a no-op
}

func TestShutDownWakesWaitingGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		done := make(chan bool)
		for range 2 {
			go func() {
				_, shutdown := q.Get()
				done <- shutdown
			}()
		}
		synctest.Wait()
		q.ShutDown()
		if !<-done || !<-done {
			t.Fatal("Get returned a key instead of shutdown")
		}
	})
}

func TestShutDownKeepsKeysReaddedDuringProcessing(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	k := get(t, q)
	q.Add("a")
	q.ShutDown()
	q.Done(k)
	if got := drain(t, q); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("got %v, want [a]", got)
	}
}

func TestShutDownWithDrainWaitsForQueuedAndInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.Add("a")
		q.Add("b")
		k := get(t, q)
		result := make(chan error, 1)
		go func() { result <- q.ShutDownWithDrain(context.Background()) }()
		synctest.Wait()
		if len(result) != 0 {
			t.Fatal("drain returned with a key in flight and one queued")
		}
		q.Done(k)
		synctest.Wait()
		if len(result) != 0 {
			t.Fatal("drain returned with a key still queued")
		}
		k = get(t, q)
		synctest.Wait()
		if len(result) != 0 {
			t.Fatal("drain returned with a key in flight")
		}
		q.Done(k)
		if err := <-result; err != nil {
			t.Fatalf("drain: %v", err)
		}
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("Get after drain did not report shutdown")
		}
	})
}

func TestShutDownWithDrainHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.Add("a")
		k := get(t, q)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := q.ShutDownWithDrain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("drain: got %v, want DeadlineExceeded", err)
		}
		if !q.ShuttingDown() {
			t.Fatal("queue not shut down after the drain gave up")
		}
		q.Done(k)
	})
}

func TestShutDownWithDrainOnEmptyQueue(t *testing.T) {
	q := newQueue(t, Config[string]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.ShutDownWithDrain(ctx); err != nil {
		t.Fatalf("drain of an empty queue: %v", err)
	}
}

func TestShutDownDropsDelayedKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Config[string]{})
		q.AddAfter("a", time.Second)
		q.Add("b")
		k := get(t, q)
		q.AddAfter("b", time.Second)
		q.ShutDown()
		q.Done(k)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("a dropped delayed key came out")
		}
		if q.index.n != 0 {
			t.Fatalf("index holds %d keys after shutdown", q.index.n)
		}
	})
}

func TestDoneKeysLeaveTheQueue(t *testing.T) {
	q := newQueue(t, Config[string]{})
	for i := range 1000 {
		q.Add(fmt.Sprint(i))
		q.Done(get(t, q))
	}
	if n := q.index.n; n != 0 {
		t.Fatalf("index holds %d done keys, want none", n)
	}
	if n := q.entries.n; n != 1 {
		t.Fatalf("slab holds %d entries, want 1 (reused)", n)
	}
}

func TestLenCountsReadyOnly(t *testing.T) {
	q := newQueue(t, Config[string]{})
	q.Add("a")
	q.Add("b")
	if k := get(t, q); k != "a" {
		t.Fatalf("got %q, want a", k)
	}
	q.Add("a") // deferred while processing
	q.AddAfter("c", time.Hour)
	if n := q.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
}
