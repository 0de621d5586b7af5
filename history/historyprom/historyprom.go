// Package historyprom exposes the metrics of a [history.Recorder] to
// Prometheus: tend_history_entries_written_total and
// tend_history_entries_dropped_total, by reason (buffer_full,
// write_failed). It is the one place history meets Prometheus: a program
// that imports history alone imports neither.
//
// Give a [Provider] to the recorder that should report:
//
//	rec, err := history.NewRecorder(backend, history.RecorderConfig{
//		Metrics: historyprom.New(historyprom.Config{Registerer: reg}),
//	})
//
// The numbers are read from the recorder when Prometheus scrapes.
package historyprom

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/history"
)

// Config configures a [Provider].
type Config struct {
	// Registerer receives the recorder's collector. Required.
	Registerer prometheus.Registerer
}

// Provider is a history.MetricsProvider that registers a recorder's
// metrics with a Prometheus registerer. A registerer takes one recorder.
type Provider struct {
	reg prometheus.Registerer
}

// ErrNoRegisterer is returned by Track when the Provider has no
// registerer.
var ErrNoRegisterer = errors.New("historyprom: Config.Registerer is nil")

// New returns a Provider registering with cfg.Registerer.
func New(cfg Config) *Provider { return &Provider{reg: cfg.Registerer} }

// Track implements history.MetricsProvider: it registers a collector of
// the recorder's metrics, which reads stats at each scrape.
func (p *Provider) Track(stats func() history.RecorderStats) error {
	if p == nil || p.reg == nil {
		return ErrNoRegisterer
	}
	if err := p.reg.Register(newCollector(stats)); err != nil {
		return fmt.Errorf("registering the metrics of a history recorder: %w", err)
	}
	return nil
}

// collector exposes one recorder's metrics.
type collector struct {
	stats            func() history.RecorderStats
	written, dropped *prometheus.Desc
}

func newCollector(stats func() history.RecorderStats) *collector {
	return &collector{
		stats:   stats,
		written: prometheus.NewDesc("tend_history_entries_written_total", "History entries written to the store.", nil, nil),
		dropped: prometheus.NewDesc("tend_history_entries_dropped_total",
			"History entries dropped, by reason: buffer_full (pushed out of a full buffer) or write_failed (refused by the store for good, or unwritten when the recorder stopped).",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.written
	ch <- c.dropped
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(s.Written))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.DroppedBufferFull), history.DropBufferFull)
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.DroppedWriteFailed), history.DropWriteFailed)
}
