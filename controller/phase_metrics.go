package controller

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/statemachine"
)

// phaseBuckets span a millisecond to about a day: operations take
// milliseconds to minutes, resting phases last hours.
var phaseBuckets = prometheus.ExponentialBuckets(0.001, 4, 13)

// phaseMetrics are the phase series of one driver, with the kind label bound
// and the series of every edge and phase of the machine made up front, so
// recording a transition takes no label lookup.
type phaseMetrics[P comparable] struct {
	collectors  []prometheus.Collector
	transitions map[statemachine.Edge[P]]prometheus.Counter
	durations   map[P]prometheus.Observer

	// mu guards since.
	mu sync.Mutex
	// since holds, per key, the phase a document entered by a write of this
	// driver and when. Time in a phase is measured from it when the
	// document leaves the phase.
	since map[string]entered[P]
}

type entered[P comparable] struct {
	phase P
	at    time.Time
}

// newPhaseMetrics registers the phase series of kind with reg. On failure it
// unregisters what it registered.
func newPhaseMetrics[S, P comparable](reg prometheus.Registerer, kind string, m *statemachine.Machine[S, P]) (*phaseMetrics[P], error) {
	labels := prometheus.Labels{"kind": kind}
	transitions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "tend_phase_transitions_total",
		Help:        "Total number of phase changes written, per kind, from and to phase",
		ConstLabels: labels,
	}, []string{"from", "to"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "tend_phase_duration_seconds",
		Help:        "Time documents spent in a phase, per kind, observed when they leave it",
		ConstLabels: labels,
		Buckets:     phaseBuckets,
	}, []string{"phase"})
	pm := &phaseMetrics[P]{
		collectors:  []prometheus.Collector{transitions, durations},
		transitions: make(map[statemachine.Edge[P]]prometheus.Counter),
		durations:   make(map[P]prometheus.Observer),
		since:       make(map[string]entered[P]),
	}
	for _, e := range m.Edges() {
		pm.transitions[e] = transitions.WithLabelValues(fmt.Sprint(e.From), fmt.Sprint(e.To))
	}
	for _, p := range m.Phases() {
		pm.durations[p] = durations.WithLabelValues(fmt.Sprint(p))
	}
	for i, c := range pm.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range pm.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("controller: registering phase metrics of %q: %w", kind, err)
		}
	}
	return pm, nil
}

// transition records that the document under key moved from one phase to
// another at now. pm may be nil (metrics off).
func (pm *phaseMetrics[P]) transition(key string, from, to P, now time.Time) {
	if pm == nil {
		return
	}
	if c := pm.transitions[statemachine.Edge[P]{From: from, To: to}]; c != nil {
		c.Inc()
	}
	pm.mu.Lock()
	prev, ok := pm.since[key]
	pm.since[key] = entered[P]{phase: to, at: now}
	pm.mu.Unlock()
	if ok && prev.phase == from {
		pm.durations[from].Observe(now.Sub(prev.at).Seconds())
	}
}

// forget drops what is known of the document under key, once it is gone.
func (pm *phaseMetrics[P]) forget(key string) {
	if pm == nil {
		return
	}
	pm.mu.Lock()
	delete(pm.since, key)
	pm.mu.Unlock()
}
