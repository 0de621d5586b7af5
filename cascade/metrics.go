package cascade

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the collector's counters. They exist, unregistered, when
// metrics are off.
type metrics struct {
	deleted      prometheus.Counter
	refsRemoved  prometheus.Counter
	released     *prometheus.CounterVec
	cyclesBroken prometheus.Counter
	relists      prometheus.Counter
	errors       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
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
		relists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_relists_total",
			Help: "Lists made again because the watch history was compacted.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cascade_errors_total",
			Help: "Documents whose processing failed and was retried (conflicts included).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	all := []prometheus.Collector{m.deleted, m.refsRemoved, m.released, m.cyclesBroken, m.relists, m.errors}
	for i, c := range all {
		if err := reg.Register(c); err != nil {
			for _, done := range all[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("%w: registering metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}
