package workqueue

import "time"

// The queue keeps its metrics as plain numbers updated under the lock it
// already holds, and a MetricsProvider reads them when it needs them (a
// Prometheus scrape, say). The hot path thus pays no atomic operation, label
// lookup or goroutine; the unfinished work is computed when read, from the
// keys being processed, so no background goroutine refreshes it.

// MetricsProvider exposes the metrics of the queues given to it in
// Config.Metrics: package workqueue/queueprom exposes them to Prometheus
// under client-go's names. A provider is told about each queue once, by
// [New]; it reads the queue's numbers whenever it wants, through stats.
type MetricsProvider interface {
	// Track starts exposing the metrics of the queue named name, read with
	// stats. It returns the function that stops exposing them, which
	// [Queue.ShutDown] calls, or an error (a queue of that name is already
	// tracked) that [New] returns.
	Track(name string, stats func() Stats) (untrack func(), err error)
}

// Stats are a queue's metrics at one moment.
type Stats struct {
	// Depth is how many keys are ready to be handed out.
	Depth int
	// Adds counts the keys that became pending (an add that collapses into
	// a pending key is not counted).
	Adds uint64
	// Retries counts the adds of [Queue.AddRateLimited].
	Retries uint64
	// QueueDuration is how long keys waited, ready, before a worker took
	// them.
	QueueDuration Histogram
	// WorkDuration is how long workers processed keys, from Get to Done.
	WorkDuration Histogram
	// Unfinished is the time spent so far on the keys being processed;
	// LongestRunning is the longest of them.
	Unfinished, LongestRunning time.Duration
}

// DurationBounds are the upper bounds of a [Histogram]'s buckets: 10 ns to
// 10 s by powers of ten, client-go's buckets.
var DurationBounds = [...]time.Duration{1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// Histogram counts durations into the buckets of [DurationBounds].
type Histogram struct {
	// Counts[i] counts the durations in (DurationBounds[i-1],
	// DurationBounds[i]]; the last counts those above every bound.
	Counts [len(DurationBounds) + 1]uint64
	// Sum is the sum of the durations.
	Sum time.Duration
}

// Count returns how many durations h counted.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// observe counts one duration, in nanoseconds.
func (h *Histogram) observe(d int64) {
	d = max(d, 0)
	i := 0
	for i < len(DurationBounds) && d > int64(DurationBounds[i]) {
		i++
	}
	h.Counts[i]++
	h.Sum += time.Duration(d)
}

// counts are the queue's cumulative metric values, guarded by Queue.mu.
type counts struct {
	adds     uint64
	retries  uint64
	queueDur Histogram
	workDur  Histogram
}

// stats returns q's metrics as of now.
func (q *Queue[K]) stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Depth: q.ready.live, Adds: q.counts.adds, Retries: q.counts.retries,
		QueueDuration: q.counts.queueDur, WorkDuration: q.counts.workDur}
	if q.processing > 0 {
		now := q.now()
		for i := range q.entries.n {
			if q.entries.at(i).state&stProcessing != 0 {
				d := time.Duration(now - q.stamps.at(i).started)
				s.Unfinished += d
				s.LongestRunning = max(s.LongestRunning, d)
			}
		}
	}
	return s
}
