package workqueue

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The queue keeps its metrics as plain numbers updated under the lock it
// already holds, and a prometheus.Collector turns them into samples when
// scraped. The hot path thus pays no atomic operation, label lookup or
// goroutine; the gauges of unfinished work are computed at scrape time from
// the keys being processed, so no background goroutine refreshes them.

// durationBounds are the histogram bucket bounds in nanoseconds: 10 ns to 10 s
// by powers of ten, the buckets client-go uses (ExponentialBuckets(10e-9, 10, 10)).
var durationBounds = [...]int64{1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// histogram counts durations into durationBounds; the last count is +Inf.
type histogram struct {
	counts [len(durationBounds) + 1]uint64
	sum    int64 // nanoseconds
}

func (h *histogram) observe(d int64) {
	d = max(d, 0)
	i := 0
	for i < len(durationBounds) && d > durationBounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += d
}

func (h *histogram) metric(desc *prometheus.Desc) prometheus.Metric {
	buckets := make(map[float64]uint64, len(durationBounds))
	var n uint64
	for i, b := range durationBounds {
		n += h.counts[i]
		buckets[float64(b)/1e9] = n
	}
	n += h.counts[len(durationBounds)]
	return prometheus.MustNewConstHistogram(desc, n, float64(h.sum)/1e9, buckets)
}

// counts are the queue's cumulative metric values, guarded by Queue.mu.
type counts struct {
	adds     uint64
	retries  uint64
	queueDur histogram
	workDur  histogram
}

// collector exposes a queue's metrics with the names client-go and
// controller-runtime use, labelled name="<Config.Name>".
type collector[K comparable] struct {
	q                                   *Queue[K]
	depth, adds, queueDur, workDur      *prometheus.Desc
	unfinished, longestRunning, retries *prometheus.Desc
}

func newCollector[K comparable](q *Queue[K], name string) *collector[K] {
	labels := prometheus.Labels{"name": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("workqueue_"+metric, help, nil, labels)
	}
	return &collector[K]{
		q:        q,
		depth:    desc("depth", "Current depth of workqueue"),
		adds:     desc("adds_total", "Total number of adds handled by workqueue"),
		queueDur: desc("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested"),
		workDur:  desc("work_duration_seconds", "How long in seconds processing an item from workqueue takes"),
		unfinished: desc("unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
			"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."),
		longestRunning: desc("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running."),
		retries:        desc("retries_total", "Total number of retries handled by workqueue"),
	}
}

// Describe implements prometheus.Collector.
func (c *collector[K]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.adds, c.queueDur, c.workDur, c.unfinished, c.longestRunning, c.retries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector[K]) Collect(ch chan<- prometheus.Metric) {
	q := c.q
	q.mu.Lock()
	depth := q.ready.live
	cnt := q.counts
	now := q.now()
	var unfinished, longest int64
	if q.processing > 0 {
		for i := range q.entries.n {
			if q.entries.at(i).state&stProcessing != 0 {
				d := now - q.stamps.at(i).started
				unfinished += d
				longest = max(longest, d)
			}
		}
	}
	q.mu.Unlock()

	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(depth))
	ch <- prometheus.MustNewConstMetric(c.adds, prometheus.CounterValue, float64(cnt.adds))
	ch <- cnt.queueDur.metric(c.queueDur)
	ch <- cnt.workDur.metric(c.workDur)
	ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, float64(unfinished)/1e9)
	ch <- prometheus.MustNewConstMetric(c.longestRunning, prometheus.GaugeValue, float64(longest)/1e9)
	ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(cnt.retries))
}
