package workqueue_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/workqueue"
)

// A controller's worker loop: keys go in, workers take them one at a time,
// and a failed key is retried with backoff until it succeeds.
func Example() {
	q, err := workqueue.New(workqueue.Config[string]{Name: "example"})
	if err != nil {
		panic(err)
	}
	failures := map[string]int{"ns/flaky": 2} // fails twice, then succeeds

	q.Add("ns/a")
	q.Add("ns/flaky")
	q.Add("ns/a") // collapses with the pending ns/a

	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			if failures[key] > 0 {
				failures[key]--
				fmt.Println("retry", key)
				q.AddRateLimited(key)
			} else {
				fmt.Println("done", key, "after", q.NumRequeues(key), "retries")
				q.Forget(key)
				if key == "ns/flaky" {
					q.ShutDown()
				}
			}
			q.Done(key)
		}
	})
	wg.Wait()
	// Output:
	// done ns/a after 0 retries
	// retry ns/flaky
	// retry ns/flaky
	// done ns/flaky after 2 retries
}

// Priorities let urgent keys overtake background work such as a periodic
// resync, while aging keeps the background keys from starving.
func Example_priority() {
	q, _ := workqueue.New(workqueue.Config[string]{})
	defer q.ShutDown()
	q.AddWithOptions("resync/1", workqueue.AddOptions{Priority: -1})
	q.AddWithOptions("resync/2", workqueue.AddOptions{Priority: -1})
	q.Add("event/1")
	q.AddWithOptions("urgent/1", workqueue.AddOptions{Priority: 10})
	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// urgent/1
	// event/1
	// resync/1
	// resync/2
}

// A key added again while a worker holds it is handed out once more, after
// Done, and never to two workers at once.
func ExampleQueue_Done() {
	q, _ := workqueue.New(workqueue.Config[string]{})
	defer q.ShutDown()
	q.Add("ns/a")
	key, _ := q.Get()
	q.Add("ns/a") // changed while being processed
	q.Add("ns/a")
	fmt.Println("ready while processing:", q.Len())
	q.Done(key)
	fmt.Println("ready after Done:", q.Len())
	// Output:
	// ready while processing: 0
	// ready after Done: 1
}

// The earliest deadline wins whatever the call order.
func ExampleQueue_AddAfter() {
	q, _ := workqueue.New(workqueue.Config[string]{})
	defer q.ShutDown()
	start := time.Now()
	q.AddAfter("ns/a", time.Hour)
	q.AddAfter("ns/a", 20*time.Millisecond)
	key, _ := q.Get()
	fmt.Println(key, "ready within a second:", time.Since(start) < time.Second)
	q.Done(key)
	// Output:
	// ns/a ready within a second: true
}

func ExampleNewExponentialLimiter() {
	l, err := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{
		Base: 10 * time.Millisecond,
		Max:  time.Second,
	})
	if err != nil {
		panic(err)
	}
	var delays []time.Duration
	for range 8 {
		delays = append(delays, l.When("ns/a"))
	}
	fmt.Println(delays)
	l.Forget("ns/a")
	fmt.Println(l.When("ns/a"))
	// Output:
	// [10ms 20ms 40ms 80ms 160ms 320ms 640ms 1s]
	// 10ms
}

func ExampleNewMaxWaitLimiter() {
	slow, _ := workqueue.NewFastSlowLimiter[string](workqueue.FastSlowConfig{
		Fast: time.Millisecond, Slow: time.Hour, FastAttempts: 1,
	})
	capped, _ := workqueue.NewMaxWaitLimiter[string](slow, time.Minute)
	fmt.Println(capped.When("ns/a"), capped.When("ns/a"))
	// Output:
	// 1ms 1m0s
}

// Triggers say why each turn of a key runs: the adds coalesced into one turn
// hand their distinct triggers to the worker together, and adds while the
// key is in flight wait for its next turn.
func ExampleQueue_GetTurn() {
	q, _ := workqueue.New(workqueue.Config[string]{})
	defer q.ShutDown()
	spec := workqueue.Trigger{Kind: "spec", Generation: 7}
	q.AddWithTrigger("ns/gw", spec, workqueue.AddOptions{})
	q.AddWithTrigger("ns/gw", workqueue.Trigger{Kind: "owned", ObjectKind: "Certificate", ObjectKey: "ns/cert"}, workqueue.AddOptions{})
	q.AddWithTrigger("ns/gw", spec, workqueue.AddOptions{}) // the same trigger again: kept once

	var buf []workqueue.Trigger // reused from turn to turn
	turn, _ := q.GetTurn(buf[:0])
	buf = turn.Triggers
	fmt.Println(turn.Key, turn.Triggers)
	q.AddWithTrigger("ns/gw", workqueue.Trigger{Kind: "deleted"}, workqueue.AddOptions{}) // in flight
	q.Done(turn.Key)

	turn, _ = q.GetTurn(buf[:0])
	fmt.Println(turn.Key, turn.Triggers)
	q.Done(turn.Key)
	// Output:
	// ns/gw [spec 7 owned Certificate ns/cert]
	// ns/gw [deleted]
}

// A retry carries its trigger to the turn its backoff ends in.
func ExampleQueue_AddWithTrigger() {
	q, _ := workqueue.New(workqueue.Config[string]{})
	defer q.ShutDown()
	q.AddWithTrigger("ns/a", workqueue.Trigger{Kind: "retry"}, workqueue.AddOptions{RateLimited: true})
	turn, _ := q.GetTurn(nil) // waits for the backoff, 5ms by default
	fmt.Println(turn.Key, turn.Triggers[0].Kind)
	q.Done(turn.Key)
	// Output:
	// ns/a retry
}

// Groups keep one tenant's backlog from delaying the others: ready keys are
// served in turn across groups, each up to its weight in a row.
func ExampleConfig_group() {
	tenant := func(key string) string { t, _, _ := strings.Cut(key, "/"); return t }
	q, _ := workqueue.New(workqueue.Config[string]{
		Group:       tenant,
		GroupWeight: func(g string) int { return map[string]int{"gold": 2}[g] }, // others: 1
	})
	defer q.ShutDown()
	for _, k := range []string{"busy/1", "busy/2", "busy/3", "busy/4", "quiet/1", "gold/1", "gold/2", "gold/3"} {
		q.Add(k)
	}
	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Print(key, " ")
		q.Done(key)
	}
	fmt.Println()
	// Output:
	// busy/1 quiet/1 gold/1 gold/2 busy/2 gold/3 busy/3 busy/4
}

// A cap on the keys in flight per group keeps one tenant from taking every
// worker: a group at its cap is skipped until one of its keys is Done.
func ExampleConfig_maxInFlightPerGroup() {
	tenant := func(key string) string { t, _, _ := strings.Cut(key, "/"); return t }
	q, _ := workqueue.New(workqueue.Config[string]{Group: tenant, MaxInFlightPerGroup: 1})
	defer q.ShutDown()
	q.Add("a/1")
	q.Add("a/2")
	q.Add("b/1")
	k1, _ := q.Get()
	k2, _ := q.Get()
	fmt.Println(k1, k2, "ready:", q.Len()) // a/2 waits for a/1
	q.Done(k1)
	k3, _ := q.Get()
	fmt.Println(k3)
	q.Done(k2)
	q.Done(k3)
	// Output:
	// a/1 b/1 ready: 1
	// a/2
}
