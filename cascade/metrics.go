package cascade

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the garbage collector's counters. They exist, unregistered,
// when metrics are off.
type metrics struct {
	deleted      prometheus.Counter
	refsRemoved  prometheus.Counter
	released     *prometheus.CounterVec
	cyclesBroken prometheus.Counter
	errors       prometheus.Counter
}

// newMetrics makes the counters and registers them with reg unless it is
// nil; the returned func unregisters them.
func newMetrics(reg prometheus.Registerer) (*metrics, func(), error) {
	m := &metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_dependents_deleted_total",
			Help: "Dependents deleted because their owners were gone or waiting for them.",
		}),
		refsRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_owner_references_removed_total",
			Help: "Owner references removed from dependents (orphaned, dangling or waiting owners).",
		}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cascade_finalizers_removed_total",
			Help: "Foreground and orphan finalizers removed once their owner's dependents were handled.",
		}, []string{"finalizer"}),
		cyclesBroken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_cycles_broken_total",
			Help: "Cycles of foreground deletions broken by unblocking one owner reference.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_errors_total",
			Help: "Documents whose processing failed and was retried (conflicts included).",
		}),
	}
	if reg == nil {
		return m, func() {}, nil
	}
	all := []prometheus.Collector{m.deleted, m.refsRemoved, m.released, m.cyclesBroken, m.errors}
	for i, c := range all {
		if err := reg.Register(c); err != nil {
			for _, done := range all[:i] {
				reg.Unregister(done)
			}
			return nil, nil, fmt.Errorf("%w: registering metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, func() {
		for _, c := range all {
			reg.Unregister(c)
		}
	}, nil
}
