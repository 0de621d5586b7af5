package bench

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// queued is how many keys stay queued during the round-trip benchmarks.
const queued = 1_000

// BenchmarkRoundTrip measures Get+Done+Add with 1,000 keys queued, with
// metrics off and on.
func BenchmarkRoundTrip(b *testing.B) {
	for _, metrics := range []bool{false, true} {
		for _, im := range impls {
			name := im.name
			if metrics {
				name += "/metrics"
			}
			b.Run(name, func(b *testing.B) {
				q := im.new(b, metrics)
				defer q.ShutDown()
				for _, k := range pool[:queued] {
					q.Add(k)
				}
				b.ReportAllocs()
				for b.Loop() {
					k, _ := q.Get()
					q.Done(k)
					q.Add(k)
				}
			})
		}
	}
}

// BenchmarkRoundTripPriority is BenchmarkRoundTrip with every add carrying a
// priority, for the queues that have priorities: "levels-1" gives every key
// priority zero, "levels-3" spreads the keys over priorities -1, 0 and 1.
func BenchmarkRoundTripPriority(b *testing.B) {
	for _, levels := range []int{1, 3} {
		// prio derives the priority from the key's last digit, so the
		// benchmark loop needs no lookup.
		prio := func(k string) int {
			if levels == 1 {
				return 0
			}
			return int(k[len(k)-1]-'0')%3 - 1
		}
		for _, im := range impls {
			if im.addWithPr == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/levels-%d", im.name, levels), func(b *testing.B) {
				q := im.new(b, false)
				defer q.ShutDown()
				for _, k := range pool[:queued] {
					im.addWithPr(q, k, prio(k))
				}
				b.ReportAllocs()
				for b.Loop() {
					k, _ := q.Get()
					q.Done(k)
					im.addWithPr(q, k, prio(k))
				}
			})
		}
	}
}

// BenchmarkDrain measures how fast two workers drain 10,000 queued keys; one
// op is one key.
func BenchmarkDrain(b *testing.B) {
	const round, workers = 10_000, 2
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			q := im.new(b, false)
			defer q.ShutDown()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				b.StopTimer()
				for _, k := range pool[:n] {
					q.Add(k)
				}
				if q.Len() != n {
					b.Fatalf("queued %d keys, Len is %d", n, q.Len())
				}
				b.StartTimer()
				var left atomic.Int64
				left.Store(int64(n))
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							k, _ := q.Get()
							q.Done(k)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}

// BenchmarkAddAfter measures AddAfter with a one-hour delay. "new" adds
// distinct keys to a queue replaced (untimed) after every 10,000 keys, so it
// includes the queue's growth; "again" re-adds keys already delayed with a
// later deadline, which changes nothing.
func BenchmarkAddAfter(b *testing.B) {
	const perQueue = 10_000
	for _, im := range impls {
		b.Run(im.name+"/new", func(b *testing.B) {
			q := im.new(b, false)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				j := i % perQueue
				if j == 0 && i > 0 {
					b.StopTimer()
					q.ShutDown()
					q = im.new(b, false)
					b.StartTimer()
				}
				q.AddAfter(pool[j], time.Hour)
			}
			b.StopTimer()
			q.ShutDown()
		})
		b.Run(im.name+"/again", func(b *testing.B) {
			q := im.new(b, false)
			defer q.ShutDown()
			for _, k := range pool[:perQueue] {
				q.AddAfter(k, time.Hour)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q.AddAfter(pool[i%perQueue], 2*time.Hour)
				i++
			}
		})
	}
}

// BenchmarkLateness delays 10,000 keys by 10 to 110 ms, in shuffled order,
// and measures with two workers how late each key is handed out. One op is
// one such run; the reported percentiles cover all keys of all runs.
func BenchmarkLateness(b *testing.B) {
	const n, workers = 10_000, 2
	const first, spread = 10 * time.Millisecond, 100 * time.Millisecond
	index := make(map[string]int, n)
	for i, k := range pool[:n] {
		index[k] = i
	}
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			var late []time.Duration
			deadlines := make([]time.Time, n)
			for range b.N {
				q := im.new(b, false)
				for i := range n {
					j := i * 7919 % n // a fixed shuffle
					d := first + time.Duration(j)*spread/n
					deadlines[j] = time.Now().Add(d)
					q.AddAfter(pool[j], d)
				}
				var left atomic.Int64
				left.Store(n)
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						var mine []time.Duration
						for left.Add(-1) >= 0 {
							k, _ := q.Get()
							mine = append(mine, time.Since(deadlines[index[k]]))
							q.Done(k)
						}
						mu.Lock()
						late = append(late, mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				q.ShutDown()
			}
			slices.Sort(late)
			pct := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))]) / 1e6 }
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(pct(1), "max-ms")
		})
	}
}

// BenchmarkMemoryPerKey reports the heap held per queued key with 10,000 and
// 100,000 keys ready, the keys' strings excluded (they belong to the pool).
func BenchmarkMemoryPerKey(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, n := range []int{10_000, 100_000} {
		for _, im := range impls {
			b.Run(im.name+"/"+itoa(n), func(b *testing.B) {
				var total float64
				for range b.N {
					before := heap()
					q := im.new(b, false)
					for _, k := range pool[:n] {
						q.Add(k)
					}
					if q.Len() != n {
						b.Fatalf("queued %d keys, Len is %d", n, q.Len())
					}
					total += float64(heap()-before) / float64(n)
					q.ShutDown()
				}
				b.ReportMetric(total/float64(b.N), "B/key")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func itoa(n int) string {
	switch n {
	case 10_000:
		return "10k"
	case 100_000:
		return "100k"
	}
	return "n"
}
