// Package queueprom exposes the metrics of [workqueue] queues to Prometheus,
// under the names client-go and controller-runtime use (workqueue_depth,
// workqueue_adds_total, workqueue_queue_duration_seconds, …), each labelled
// name="<the queue's name>". It is the one place the work queue meets
// Prometheus: a program that imports workqueue alone imports neither.
//
// Give a [Provider] to each queue that should report:
//
//	q, err := workqueue.New(workqueue.Config[string]{
//		Name:    "gateways",
//		Metrics: queueprom.New(queueprom.Config{Registerer: reg}),
//	})
//
// The numbers are read from the queue when Prometheus scrapes: the queue's
// hot path pays for no metric.
package queueprom

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/workqueue"
)

// Config configures a [Provider].
type Config struct {
	// Registerer receives one collector per queue. Required.
	Registerer prometheus.Registerer
}

// Provider is a workqueue.MetricsProvider that registers the metrics of each
// queue it tracks with a Prometheus registerer. It is safe for concurrent
// use; one Provider may serve many queues of different names.
type Provider struct {
	reg prometheus.Registerer
}

// ErrNoRegisterer is returned by Track when the Provider has no
// registerer.
var ErrNoRegisterer = errors.New("queueprom: Config.Registerer is nil")

// New returns a Provider registering with cfg.Registerer.
func New(cfg Config) *Provider { return &Provider{reg: cfg.Registerer} }

// Track implements workqueue.MetricsProvider: it registers a collector of
// the queue's metrics, which reads stats at each scrape. Registering a
// second live queue of the same name fails.
func (p *Provider) Track(name string, stats func() workqueue.Stats) (func(), error) {
	if p == nil || p.reg == nil {
		return nil, ErrNoRegisterer
	}
	c := newCollector(name, stats)
	if err := p.reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering the metrics of queue %q: %w", name, err)
	}
	var once sync.Once
	return func() { once.Do(func() { p.reg.Unregister(c) }) }, nil
}

// collector exposes one queue's metrics.
type collector struct {
	stats                               func() workqueue.Stats
	depth, adds, queueDur, workDur      *prometheus.Desc
	unfinished, longestRunning, retries *prometheus.Desc
}

func newCollector(name string, stats func() workqueue.Stats) *collector {
	labels := prometheus.Labels{"name": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("workqueue_"+metric, help, nil, labels)
	}
	return &collector{
		stats:    stats,
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
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.adds, c.queueDur, c.workDur, c.unfinished, c.longestRunning, c.retries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Depth))
	ch <- prometheus.MustNewConstMetric(c.adds, prometheus.CounterValue, float64(s.Adds))
	ch <- histogram(c.queueDur, s.QueueDuration)
	ch <- histogram(c.workDur, s.WorkDuration)
	ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, s.Unfinished.Seconds())
	ch <- prometheus.MustNewConstMetric(c.longestRunning, prometheus.GaugeValue, s.LongestRunning.Seconds())
	ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(s.Retries))
}

// histogram returns h as a Prometheus histogram, its buckets in seconds.
func histogram(desc *prometheus.Desc, h workqueue.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(workqueue.DurationBounds))
	var n uint64
	for i, b := range workqueue.DurationBounds {
		n += h.Counts[i]
		buckets[b.Seconds()] = n
	}
	n += h.Counts[len(workqueue.DurationBounds)]
	return prometheus.MustNewConstHistogram(desc, n, h.Sum.Seconds(), buckets)
}
