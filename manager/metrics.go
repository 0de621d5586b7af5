package manager

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// managerMetrics are a manager's series; the gauges are read from the
// manager when gathered.
type managerMetrics struct {
	renewFailures prometheus.Counter
}

// newManagerMetrics registers the series of manager m's mode with reg. On
// failure it unregisters what it registered.
func newManagerMetrics(reg prometheus.Registerer, m *Manager) (*managerMetrics, error) {
	mm := &managerMetrics{renewFailures: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tend_manager_lease_renew_failures_total",
		Help: "Total number of renewals of a held lease that failed, refused by the store or unanswered",
	})}
	var collectors []prometheus.Collector
	if m.mode != Sharded {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "leader_election_master_status",
			Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. " +
				"'name' is the string used to identify the lease. Please make sure to group by name.",
			ConstLabels: prometheus.Labels{"name": m.prefix + "leader"},
		}, func() float64 { return boolValue(m.IsLeader()) }))
	}
	if m.mode == Sharded {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tend_manager_owned_shards",
			Help: "Number of shards this replica holds",
		}, func() float64 { return float64(len(m.OwnedShards())) }))
	}
	if m.mode != Single {
		collectors = append(collectors, mm.renewFailures)
	}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("controller: registering the metrics of manager %q: %w", m.identity, err)
		}
	}
	return mm, nil
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
