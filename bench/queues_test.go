package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	cgworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/tendhq/tend/workqueue"
	"github.com/tendhq/tend/workqueue/queueprom"
)

// pool is the fixed key pool every benchmark draws from, built before timing.
var pool = func() []string {
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/name-%d", i)
	}
	return keys
}()

// queue is the part of the three queues' APIs the benchmarks use.
type queue interface {
	Add(key string)
	AddAfter(key string, d time.Duration)
	Get() (string, bool)
	Done(key string)
	Len() int
	ShutDown()
}

// impl builds one of the compared queues, with or without Prometheus metrics
// (registered in a fresh registry), and adds with a priority.
type impl struct {
	name      string
	new       func(tb testing.TB, metrics bool) queue
	addWithPr func(q queue, key string, prio int)
}

var impls = []impl{
	{
		name: "tend",
		new: func(tb testing.TB, metrics bool) queue {
			cfg := workqueue.Config[string]{Name: "bench"}
			if metrics {
				cfg.Metrics = queueprom.New(queueprom.Config{Registerer: prometheus.NewRegistry()})
			}
			q, err := workqueue.New(cfg)
			if err != nil {
				tb.Fatal(err)
			}
			return q
		},
		addWithPr: func(q queue, key string, prio int) {
			q.(*workqueue.Queue[string]).AddWithOptions(key, workqueue.AddOptions{Priority: prio})
		},
	},
	{
		name: "clientgo",
		new: func(tb testing.TB, metrics bool) queue {
			cfg := cgworkqueue.TypedRateLimitingQueueConfig[string]{}
			if metrics {
				cfg.Name = "bench"
				cfg.MetricsProvider = newPromProvider()
			} else {
				cfg.MetricsProvider = noopProvider{}
			}
			return cgworkqueue.NewTypedRateLimitingQueueWithConfig(cgworkqueue.DefaultTypedControllerRateLimiter[string](), cfg)
		},
	},
	{
		name: "controllerruntime",
		new: func(tb testing.TB, metrics bool) queue {
			name := ""
			var provider cgworkqueue.MetricsProvider = noopProvider{}
			if metrics {
				name, provider = "bench", newPromProvider()
			}
			return priorityqueue.New(name, func(o *priorityqueue.Opts[string]) { o.MetricProvider = provider })
		},
		addWithPr: func(q queue, key string, prio int) {
			q.(priorityqueue.PriorityQueue[string]).AddWithOpts(priorityqueue.AddOpts{Priority: &prio}, key)
		},
	},
}

// promProvider gives client-go and controller-runtime the same Prometheus
// metrics tend registers, in a fresh registry.
type promProvider struct{ reg *prometheus.Registry }

func newPromProvider() promProvider { return promProvider{reg: prometheus.NewRegistry()} }

func (p promProvider) opts(metric string, name string) prometheus.Opts {
	return prometheus.Opts{Subsystem: "workqueue", Name: metric, Help: metric, ConstLabels: prometheus.Labels{"name": name}}
}

func (p promProvider) gauge(metric, name string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts(p.opts(metric, name)))
	p.reg.MustRegister(g)
	return g
}

func (p promProvider) counter(metric, name string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts(p.opts(metric, name)))
	p.reg.MustRegister(c)
	return c
}

func (p promProvider) histogram(metric, name string) prometheus.Histogram {
	o := p.opts(metric, name)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, ConstLabels: o.ConstLabels,
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10),
	})
	p.reg.MustRegister(h)
	return h
}

func (p promProvider) NewDepthMetric(name string) cgworkqueue.GaugeMetric {
	return p.gauge("depth", name)
}

func (p promProvider) NewAddsMetric(name string) cgworkqueue.CounterMetric {
	return p.counter("adds_total", name)
}

func (p promProvider) NewLatencyMetric(name string) cgworkqueue.HistogramMetric {
	return p.histogram("queue_duration_seconds", name)
}

func (p promProvider) NewWorkDurationMetric(name string) cgworkqueue.HistogramMetric {
	return p.histogram("work_duration_seconds", name)
}

func (p promProvider) NewUnfinishedWorkSecondsMetric(name string) cgworkqueue.SettableGaugeMetric {
	return p.gauge("unfinished_work_seconds", name)
}

func (p promProvider) NewLongestRunningProcessorSecondsMetric(name string) cgworkqueue.SettableGaugeMetric {
	return p.gauge("longest_running_processor_seconds", name)
}

func (p promProvider) NewRetriesMetric(name string) cgworkqueue.CounterMetric {
	return p.counter("retries_total", name)
}

// noopProvider turns client-go's and controller-runtime's metrics off.
type noopProvider struct{}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

func (noopProvider) NewDepthMetric(string) cgworkqueue.GaugeMetric       { return noopMetric{} }
func (noopProvider) NewAddsMetric(string) cgworkqueue.CounterMetric      { return noopMetric{} }
func (noopProvider) NewLatencyMetric(string) cgworkqueue.HistogramMetric { return noopMetric{} }
func (noopProvider) NewWorkDurationMetric(string) cgworkqueue.HistogramMetric {
	return noopMetric{}
}
func (noopProvider) NewUnfinishedWorkSecondsMetric(string) cgworkqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopProvider) NewLongestRunningProcessorSecondsMetric(string) cgworkqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopProvider) NewRetriesMetric(string) cgworkqueue.CounterMetric { return noopMetric{} }
