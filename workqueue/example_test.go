package workqueue_test

import (
	"fmt"
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
