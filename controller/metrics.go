package controller

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the result label of controller_runtime_reconcile_total, as
// controller-runtime names them.
const (
	resultSuccess      = "success"
	resultError        = "error"
	resultRequeueAfter = "requeue_after"
)

// metrics are one controller's series, with the controller label bound, so the
// reconcile path touches only atomics.
type metrics struct {
	collectors []prometheus.Collector

	success, failure, requeueAfter prometheus.Counter
	errors, terminal, panics       prometheus.Counter
	timeouts                       prometheus.Counter
	duration                       prometheus.Observer
	active, workers                prometheus.Gauge
}

// reconcileBuckets are controller-runtime's buckets for
// controller_runtime_reconcile_time_seconds, so existing dashboards and alerts
// read the same quantiles.
var reconcileBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
	0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// newMetrics registers the series of the controller called name with reg. On
// failure it unregisters what it registered.
func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	labels := prometheus.Labels{"controller": name}
	counter := func(metric, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: metric, Help: help, ConstLabels: labels})
	}
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "controller_runtime_reconcile_total",
		Help:        "Total number of reconciliations per controller",
		ConstLabels: labels,
	}, []string{"result"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "controller_runtime_reconcile_time_seconds",
		Help:        "Length of time per reconciliation per controller",
		ConstLabels: labels,
		Buckets:     reconcileBuckets,
	})
	m := &metrics{
		success:      total.WithLabelValues(resultSuccess),
		failure:      total.WithLabelValues(resultError),
		requeueAfter: total.WithLabelValues(resultRequeueAfter),
		errors:       counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller"),
		terminal:     counter("controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller"),
		panics:       counter("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller"),
		timeouts:     counter("controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller"),
		duration:     duration,
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "controller_runtime_active_workers", Help: "Number of currently used workers per controller", ConstLabels: labels,
		}),
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "controller_runtime_max_concurrent_reconciles", Help: "Maximum number of concurrent reconciles per controller", ConstLabels: labels,
		}),
	}
	m.collectors = []prometheus.Collector{total, m.errors, m.terminal, m.panics, m.timeouts, duration, m.active, m.workers}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("controller: registering metrics of %q: %w", name, err)
		}
	}
	return m, nil
}

// outcome classifies a finished reconcile for the metrics.
type outcome uint8

const (
	outcomeSuccess outcome = iota
	outcomeRequeueAfter
	outcomeError
	outcomeTerminal
	outcomePanic
)

// record counts one reconcile. m may be nil (metrics off).
func (m *metrics) record(o outcome, d time.Duration, timedOut bool) {
	if m == nil {
		return
	}
	m.duration.Observe(d.Seconds())
	switch o {
	case outcomeSuccess:
		m.success.Inc()
	case outcomeRequeueAfter:
		m.requeueAfter.Inc()
	default:
		m.failure.Inc()
		m.errors.Inc()
		switch o {
		case outcomeTerminal:
			m.terminal.Inc()
		case outcomePanic:
			m.panics.Inc()
		}
	}
	if timedOut {
		m.timeouts.Inc()
	}
}
