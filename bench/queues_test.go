package bench

import (
	"fmt"
	"slices"
	"strings"
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

// tenantOf groups the keys of the grouped benchmarks: "t<N>/..." by "t<N>".
func tenantOf(key string) string {
	t, _, _ := strings.Cut(key, "/")
	return t
}

// BenchmarkFairness measures how long one tenant's backlog delays the keys
// of others: one group holds 100,000 ready keys and nine groups 10 each, all
// added before the first Get (the large group first); one worker takes and
// finishes keys, re-adding the large group's to keep its backlog, until
// every small group's key has been served. A key's wait is the number of
// Gets between its Add and its Get; its fair share is r × 10 for the r-th
// key of its group, every group being owed one Get in ten. It reports the
// largest and the median ratio of wait to fair share over the 90 small
// keys: "tend/groups" with Config.Group, "tend" and "clientgo" without
// groups, which serve the backlog first.
func BenchmarkFairness(b *testing.B) {
	const big, small, groups = 100_000, 10, 10
	keys := make([]string, 0, big+small*(groups-1))
	for i := range big {
		keys = append(keys, fmt.Sprintf("t0/%d", i))
	}
	fair := map[string]int{} // small key -> fair share in Gets
	for g := 1; g < groups; g++ {
		for i := range small {
			k := fmt.Sprintf("t%d/%d", g, i)
			keys = append(keys, k)
			fair[k] = (i + 1) * groups
		}
	}
	news := []struct {
		name string
		new  func(tb testing.TB) queue
	}{
		{"tend/groups", func(tb testing.TB) queue {
			q, err := workqueue.New(workqueue.Config[string]{Group: tenantOf})
			if err != nil {
				tb.Fatal(err)
			}
			return q
		}},
		{"tend", func(tb testing.TB) queue { return impls[0].new(tb, false) }},
		{"clientgo", func(tb testing.TB) queue { return impls[1].new(tb, false) }},
	}
	for _, im := range news {
		b.Run(im.name, func(b *testing.B) {
			var worst, median float64
			ratios := make([]float64, 0, len(fair))
			for b.Loop() {
				q := im.new(b)
				added := make(map[string]int, len(fair))
				gets := 0
				for _, k := range keys {
					if _, ok := fair[k]; ok {
						added[k] = gets
					}
					q.Add(k)
				}
				ratios = ratios[:0]
				for len(ratios) < len(fair) {
					k, _ := q.Get()
					gets++
					q.Done(k)
					if at, ok := added[k]; ok {
						ratios = append(ratios, float64(gets-at)/float64(fair[k]))
					} else {
						q.Add(k)
					}
				}
				q.ShutDown()
				slices.Sort(ratios)
				worst, median = ratios[len(ratios)-1], ratios[len(ratios)/2]
			}
			b.ReportMetric(worst, "max-wait/fair")
			b.ReportMetric(median, "p50-wait/fair")
		})
	}
}

// BenchmarkRoundTripGroups is BenchmarkRoundTrip for tend with the 1,000
// queued keys spread over 10 groups, served fairly, with and without a cap
// of 2 keys in flight per group.
func BenchmarkRoundTripGroups(b *testing.B) {
	for _, limit := range []int{0, 2} {
		b.Run(fmt.Sprintf("tend/cap-%d", limit), func(b *testing.B) {
			q, err := workqueue.New(workqueue.Config[string]{Group: tenantOf, MaxInFlightPerGroup: limit})
			if err != nil {
				b.Fatal(err)
			}
			defer q.ShutDown()
			keys := make([]string, queued)
			for i := range keys {
				keys[i] = fmt.Sprintf("t%d/%s", i%10, pool[i])
				q.Add(keys[i])
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

// BenchmarkRoundTripTriggers is BenchmarkRoundTrip for tend with every add
// carrying a trigger and every Get taking the turn's triggers into a reused
// buffer.
func BenchmarkRoundTripTriggers(b *testing.B) {
	q, err := workqueue.New(workqueue.Config[string]{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.ShutDown()
	for _, k := range pool[:queued] {
		q.AddWithTrigger(k, workqueue.Trigger{Kind: "spec", Generation: 1}, workqueue.AddOptions{})
	}
	var buf []workqueue.Trigger
	b.ReportAllocs()
	for b.Loop() {
		t, _ := q.GetTurn(buf[:0])
		buf = t.Triggers
		q.Done(t.Key)
		q.AddWithTrigger(t.Key, workqueue.Trigger{Kind: "owned", ObjectKind: "Certificate", ObjectKey: t.Key}, workqueue.AddOptions{})
	}
}
