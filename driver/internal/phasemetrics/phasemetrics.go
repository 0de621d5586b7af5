// Package phasemetrics holds the Prometheus series a driver exports for the
// documents of one kind: phase transitions and time in each phase, the
// documents per (intent, phase), step attempts, step errors by class, failures, refusals, drift
// repairs, requests, timers, operator commands and paused documents. The
// driver's documentation lists the series.
package phasemetrics

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

// Metrics are the series of one driver, with the kind label bound and
// the series of every edge and phase of the machine made up front, so
// recording a transition takes no label lookup. A nil *Metrics records
// nothing (metrics off).
type Metrics[S, P comparable] struct {
	collectors  []prometheus.Collector
	transitions map[statemachine.Edge[P]]prometheus.Counter
	durations   map[P]prometheus.Observer
	documents   map[statemachine.Pair[S, P]]prometheus.Gauge
	steps       map[stepKey[P]]prometheus.Counter
	stepErrors  *prometheus.CounterVec // by phase, step and declared error class
	failures    *prometheus.CounterVec // by phase and cause
	refusals    *prometheus.CounterVec // by phase
	drifts      *prometheus.CounterVec // by phase
	requests    *prometheus.CounterVec // by request and result
	timers      *prometheus.CounterVec // by timer
	commands    *prometheus.CounterVec // by verb and result
	pausedDocs  prometheus.Gauge

	// mu guards since and pairs.
	mu sync.Mutex
	// since holds, per key, the phase a document entered by a write of this
	// driver and when. Time in a phase is measured from it when the
	// document leaves the phase.
	since map[string]entered[P]
	// pairs holds, per key, the (target intent, phase) the documents gauge
	// counts the document under.
	pairs map[string]statemachine.Pair[S, P]
	// held holds the keys of the documents last seen paused.
	held map[string]bool
}

// stepKey names one series of tend_step_attempts_total.
type stepKey[P comparable] struct {
	phase   P
	step    string
	outcome statemachine.Outcome
}

type entered[P comparable] struct {
	phase P
	at    time.Time
}

// New registers the series of kind with reg. On failure it
// unregisters what it registered.
func New[S, P comparable](reg prometheus.Registerer, kind string, m *statemachine.Machine[S, P]) (*Metrics[S, P], error) {
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
	pm := &Metrics[S, P]{
		transitions: make(map[statemachine.Edge[P]]prometheus.Counter),
		durations:   make(map[P]prometheus.Observer),
		documents:   make(map[statemachine.Pair[S, P]]prometheus.Gauge),
		steps:       make(map[stepKey[P]]prometheus.Counter),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_operation_failures_total",
			Help:        "Operations given up, per kind, phase and cause (terminal, deadline, attempts)",
			ConstLabels: labels,
		}, []string{"phase", "cause"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_intent_refusals_total",
			Help:        "Intents found refused, per kind and phase; each refusal counts once",
			ConstLabels: labels,
		}, []string{"phase"}),
		drifts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_drift_total",
			Help:        "Drift found in settled documents (a health condition stopped holding), per kind and phase",
			ConstLabels: labels,
		}, []string{"phase"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_requests_total",
			Help:        "One-shot request tokens recorded served, per kind, request and result (served: the operation carrying them completed; moot; refused)",
			ConstLabels: labels,
		}, []string{"request", "result"}),
		timers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_timers_fired_total",
			Help:        "Timers that began an operation, per kind and timer",
			ConstLabels: labels,
		}, []string{"timer"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_operator_commands_total",
			Help:        "Operator commands carried out, per kind, verb and result (applied, refused)",
			ConstLabels: labels,
		}, []string{"verb", "result"}),
		stepErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "tend_step_errors_total",
			Help:        "Failed step calls, per kind, phase, step and error class (a class the machine declares; empty when none matched)",
			ConstLabels: labels,
		}, []string{"phase", "step", "class"}),
		pausedDocs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "tend_paused_documents",
			Help:        "Documents this replica last found paused by an operator, per kind",
			ConstLabels: labels,
		}),
		since: make(map[string]entered[P]),
		pairs: make(map[string]statemachine.Pair[S, P]),
		held:  make(map[string]bool),
	}
	documents := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name:        "tend_documents",
		Help:        "Documents this replica last saw in each (intent served, phase), per kind",
		ConstLabels: labels,
	}, []string{"state", "phase"})
	steps := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "tend_step_attempts_total",
		Help:        "Step calls, per kind, phase, step and outcome (done, progressed, failed, failed-terminal)",
		ConstLabels: labels,
	}, []string{"phase", "step", "outcome"})
	pm.collectors = []prometheus.Collector{transitions, durations, documents, steps, pm.failures, pm.refusals,
		pm.stepErrors, pm.drifts, pm.requests, pm.timers, pm.commands, pm.pausedDocs}
	for _, s := range m.States() {
		for _, p := range m.Phases() {
			pm.documents[statemachine.Pair[S, P]{State: s, Phase: p}] = documents.WithLabelValues(fmt.Sprint(s), fmt.Sprint(p))
		}
	}
	for _, p := range m.Phases() {
		ps, _ := m.Spec(p)
		for _, step := range ps.Steps {
			for _, out := range []statemachine.Outcome{statemachine.Done, statemachine.Progressed, statemachine.Pending, statemachine.Failed, statemachine.FailedTerminal} {
				pm.steps[stepKey[P]{p, step, out}] = steps.WithLabelValues(fmt.Sprint(p), step, out.String())
			}
		}
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

// Transition records that the document under key moved from one phase to
// another at now.
func (pm *Metrics[S, P]) Transition(key string, from, to P, now time.Time) {
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

// Observe counts the document under key in (state, phase).
func (pm *Metrics[S, P]) Observe(key string, state S, phase P) {
	if pm == nil {
		return
	}
	pair := statemachine.Pair[S, P]{State: state, Phase: phase}
	pm.mu.Lock()
	prev, ok := pm.pairs[key]
	if ok && prev == pair {
		pm.mu.Unlock()
		return
	}
	pm.pairs[key] = pair
	pm.mu.Unlock()
	if g := pm.documents[prev]; ok && g != nil {
		g.Dec()
	}
	if g := pm.documents[pair]; g != nil {
		g.Inc()
	}
}

// Step counts one step call.
func (pm *Metrics[S, P]) Step(phase P, step string, out statemachine.Outcome) {
	if pm == nil {
		return
	}
	if c := pm.steps[stepKey[P]{phase, step, out}]; c != nil {
		c.Inc()
	}
}

// StepError counts a failed call of step, whose error the machine
// classed as class (a declared class's name, or empty).
func (pm *Metrics[S, P]) StepError(phase P, step, class string) {
	if pm != nil {
		pm.stepErrors.WithLabelValues(fmt.Sprint(phase), step, class).Inc()
	}
}

// Failed counts an operation of phase given up for cause.
func (pm *Metrics[S, P]) Failed(phase P, cause statemachine.Cause) {
	if pm != nil {
		pm.failures.WithLabelValues(fmt.Sprint(phase), string(cause)).Inc()
	}
}

// Refused counts a refusal that began in phase.
func (pm *Metrics[S, P]) Refused(phase P) {
	if pm != nil {
		pm.refusals.WithLabelValues(fmt.Sprint(phase)).Inc()
	}
}

// Drift counts drift found in phase.
func (pm *Metrics[S, P]) Drift(phase P) {
	if pm != nil {
		pm.drifts.WithLabelValues(fmt.Sprint(phase)).Inc()
	}
}

// Request counts a request acted on.
func (pm *Metrics[S, P]) Request(name, result string) {
	if pm != nil {
		pm.requests.WithLabelValues(name, result).Inc()
	}
}

// Timer counts a timer that fired.
func (pm *Metrics[S, P]) Timer(name string) {
	if pm != nil {
		pm.timers.WithLabelValues(name).Inc()
	}
}

// Command counts an operator command carried out or refused.
func (pm *Metrics[S, P]) Command(verb statemachine.Verb, result string) {
	if pm != nil {
		pm.commands.WithLabelValues(string(verb), result).Inc()
	}
}

// Paused records whether the document under key was found paused.
func (pm *Metrics[S, P]) Paused(key string, paused bool) {
	if pm == nil {
		return
	}
	pm.mu.Lock()
	was := pm.held[key]
	switch {
	case paused && !was:
		pm.held[key] = true
	case !paused && was:
		delete(pm.held, key)
	}
	pm.mu.Unlock()
	switch {
	case paused && !was:
		pm.pausedDocs.Inc()
	case !paused && was:
		pm.pausedDocs.Dec()
	}
}

// Forget drops what is known of the document under key, once it is gone.
func (pm *Metrics[S, P]) Forget(key string) {
	if pm == nil {
		return
	}
	pm.Paused(key, false)
	pm.mu.Lock()
	delete(pm.since, key)
	prev, ok := pm.pairs[key]
	delete(pm.pairs, key)
	pm.mu.Unlock()
	if g := pm.documents[prev]; ok && g != nil {
		g.Dec()
	}
}
