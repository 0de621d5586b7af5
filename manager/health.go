package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultStuckReconcileAfter is how long one reconcile may run before
// [Manager.CheckLiveness] reports it stuck, when
// [Config.StuckReconcileAfter] is zero.
const DefaultStuckReconcileAfter = 10 * time.Minute

// Errors returned by [Manager.CheckReadiness] and [Manager.CheckLiveness],
// wrapped with the failing check and its reason.
var (
	// ErrNotReady: the replica cannot do its share of the work yet.
	ErrNotReady = errors.New("manager: not ready")
	// ErrNotLive: the replica is wedged and should be restarted.
	ErrNotLive = errors.New("manager: not live")
)

// Leadership is the share of the work a replica holds, as
// [Config.OnLeadershipChange] reports it. The zero value is a replica
// that holds nothing.
type Leadership struct {
	// Leader is what [Manager.IsLeader] reports.
	Leader bool
	// Shards is what [Manager.OwnedShards] reports: the shards held, sorted;
	// nil when none are held, and always outside Sharded mode.
	Shards []int
}

func (l Leadership) equal(o Leadership) bool {
	return l.Leader == o.Leader && slices.Equal(l.Shards, o.Shards)
}

// IsLeader reports whether this replica leads the work:
//   - with [LeaderElection], whether it holds the leader lease. It turns
//     false as soon as the lease is lost or given up, before the controllers
//     have stopped.
//   - with [Single], whether [Manager.Run] runs and has not begun to stop.
//   - with [Sharded], always false: no replica leads, each holds a share of
//     the shards ([Manager.OwnedShards]).
//
// It may be called at any time, from any goroutine (OnLeadershipChange
// included), and never waits for the manager.
func (m *Manager) IsLeader() bool {
	switch m.mode {
	case Single:
		return m.state.Load() == stateRunning
	case LeaderElection:
		h := m.leading.Load()
		return h != nil && !h.Lost()
	}
	return false
}

// OwnedShards returns the shards this replica reconciles the keys of, sorted:
// the shard leases it holds and is not giving up. It returns nil when it
// holds none, which is always the case outside [Sharded] mode and while
// [Manager.Run] is not running. It may be called at any time, from any
// goroutine (OnLeadershipChange included), and never waits for the manager.
func (m *Manager) OwnedShards() []int {
	if s := m.sharding.Load(); s != nil {
		return s.Owned()
	}
	return nil
}

func (m *Manager) leadership() Leadership {
	return Leadership{Leader: m.IsLeader(), Shards: m.OwnedShards()}
}

// changed tells the reporter that the leadership may have changed. It never
// blocks and may be called with any lock held.
func (m *Manager) changed() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// report calls the OnLeadershipChange callback each time the leadership
// differs from what it last reported, until end is closed; it then reports
// the leadership once more if it changed, and returns.
func (m *Manager) report(end <-chan struct{}) {
	var last Leadership
	for {
		ended := false
		select {
		case <-m.notify:
		case <-end:
			ended = true
		}
		if now := m.leadership(); !now.equal(last) {
			m.onChange(now)
			last = now
		}
		if ended {
			return
		}
	}
}

// CheckReadiness returns nil when the replica is ready to do its share of
// the work, or an error matching [ErrNotReady] for each check that fails:
//   - running: [Manager.Run] runs and has not begun to stop.
//   - sources: every controller runs and has synced its sources
//     ([Controller.HasSynced]). A standby replica in LeaderElection mode, whose
//     controllers wait for the lead, passes: as in Kubernetes, a standby is
//     ready (it serves by standing by), and whether it leads is reported
//     apart, by [Manager.IsLeader] and the leader_election_master_status
//     metric.
//   - machines (when a driver runs under the manager): the machine of
//     every driven kind is checked against the one recorded for the kind
//     and the documents the store holds, and the kind runs. It fails while
//     the check runs, for a kind held because its machine would strand
//     documents, and for a kind that stood down for a newer machine (see
//     [Manager.Run]); the controllers of such a kind are left out of the
//     sources check.
//   - shards (Sharded mode only): the replica holds its share of the shards,
//     as it computed it when it last balanced them; it fails until the first
//     balance, and whenever a shard is lost until it is taken again.
//
// The handler of [Manager.Handler] serves it as /readyz.
func (m *Manager) CheckReadiness() error {
	return failures(ErrNotReady, m.readiness(time.Now()))
}

// CheckLiveness returns nil unless the replica's work is wedged, or an error
// matching [ErrNotLive] for each check that fails:
//   - reconciles: no reconcile has run longer than
//     [Config.StuckReconcileAfter], nor its controller's
//     [Config.Timeout] when that is longer (a reconcile that outlives its
//     timeout ignores its context). Absent when the bound is negative.
//   - leases (LeaderElection and Sharded modes): the Leaser has not been
//     failing for longer than [Config.LeaseDuration], counted from the
//     first call it failed since it last answered (an answer includes
//     store.ErrLeaseHeld and store.ErrLeaseLost), and no call to it has been
//     waiting that long. A store outage longer than LeaseDuration therefore
//     fails this check on every replica; give the liveness probe a failure
//     threshold that rides out the outages the store is expected to have.
//
// A manager that is not running is live. The handler of [Manager.Handler]
// serves it as /healthz.
func (m *Manager) CheckLiveness() error {
	return failures(ErrNotLive, m.liveness(time.Now()))
}

// check is the outcome of one health check: reason is empty when it passed.
type check struct {
	name, reason string
}

// failures returns an error matching sentinel for each failed check, joined.
func failures(sentinel error, checks []check) error {
	var errs []error
	for _, c := range checks {
		if c.reason != "" {
			errs = append(errs, fmt.Errorf("%w: %s: %s", sentinel, c.name, c.reason))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) readiness(time.Time) []check {
	running := check{name: "running"}
	switch m.state.Load() {
	case stateIdle:
		running.reason = "the manager is not running"
	case stateStopping:
		running.reason = "the manager is stopping"
	}
	sources := check{name: "sources"}
	if m.mode != LeaderElection || m.IsLeader() {
		var waiting []string
		for _, c := range m.controllerList() {
			if !c.HasSynced() && !m.held(c) {
				waiting = append(waiting, c.Name())
			}
		}
		if len(waiting) > 0 {
			sources.reason = "waiting for the sources of controller " + quoteAll(waiting) + " to sync"
		}
	}
	checks := []check{running, sources}
	if machines, ok := m.machinesCheck(); ok {
		checks = append(checks, machines)
	}
	if m.mode == Sharded {
		shards := check{name: "shards"}
		if s := m.sharding.Load(); s == nil {
			shards.reason = "no shards held"
		} else {
			shards.reason = s.ShareMissing()
		}
		checks = append(checks, shards)
	}
	return checks
}

func (m *Manager) liveness(now time.Time) []check {
	var checks []check
	if m.stuckAfter > 0 {
		reconciles := check{name: "reconciles"}
		var stuck []string
		for _, c := range m.controllerList() {
			bound := max(m.stuckAfter, c.Timeout())
			if key, start, ok := c.OldestReconcile(); ok && now.Sub(start) > bound {
				stuck = append(stuck, fmt.Sprintf("controller %q has been reconciling %q for %v, longer than %v",
					c.Name(), key, now.Sub(start), bound))
			}
		}
		reconciles.reason = strings.Join(stuck, "; ")
		checks = append(checks, reconciles)
	}
	if m.mode != Single {
		leases := check{name: "leases"}
		if m.state.Load() != stateIdle {
			leases.reason = m.leases.Wedged(now)
		}
		checks = append(checks, leases)
	}
	return checks
}

// quoteAll returns the names quoted and separated by commas.
func quoteAll(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}
