package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/internal/wait"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/manager/internal/lease"
	"github.com/tendhq/tend/manager/internal/shard"
	"github.com/tendhq/tend/store"
)

// Errors returned by [New] and [Manager.Run].
var (
	// ErrInvalidConfig is returned, wrapped with the reason, by [New] when a
	// configuration value is missing or out of range, and by the builders'
	// [DriveBuilder.Complete] and [CascadeBuilder.Complete] for every
	// configuration error they find.
	ErrInvalidConfig = errors.New("manager: invalid config")
	// ErrAlreadyRunning is returned by Run when the manager is already
	// running.
	ErrAlreadyRunning = errors.New("manager: already running")
)

// Mode says how the replicas of a [Manager] share the work.
type Mode int

const (
	// Single runs every controller with no coordination: the only replica,
	// or replicas whose keys never meet.
	Single Mode = iota
	// LeaderElection runs the controllers only on the replica that holds the
	// lease "<LeasePrefix>leader"; the others stand by and take over when it
	// lapses.
	LeaderElection
	// Sharded hashes keys into [Config.Shards] shards (see [ShardOf]),
	// each a lease "<LeasePrefix>shard/<n>", and spreads the shards evenly
	// over the live replicas, which announce themselves with a lease
	// "<LeasePrefix>member/<Identity>". A replica reconciles a key only while
	// it holds the key's shard.
	Sharded
)

// String returns "Single", "LeaderElection" or "Sharded".
func (m Mode) String() string {
	switch m {
	case Single:
		return "Single"
	case LeaderElection:
		return "LeaderElection"
	case Sharded:
		return "Sharded"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Defaults of [Config].
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultShards        = 32
)

// Config configures a [Manager].
type Config struct {
	// Controllers are controllers built by hand ([controller.New]) to run
	// beside those the builders add ([Drive], [Manager.Cascade]); all must
	// have distinct names. A controller belongs to one manager and is not
	// run on its own meanwhile. Empty is valid: the builders add the
	// controllers.
	Controllers []*controller.Controller

	// Store is the store the controllers built by [Drive] and
	// [Manager.Cascade] read and write: their documents, histories and
	// registrations live there. The builders make sure it holds the kinds
	// they need: a store with a method AddKinds(kinds ...string) error
	// (backends/memory, backends/postgres) is given the missing ones; for
	// any other, a missing kind is a configuration error of the builder.
	// It is also the Leaser when Leaser is nil. Required to use the
	// builders.
	Store store.Backend

	// TracerProvider receives the spans of the controllers and drivers the
	// builders make: a span per reconcile, step and observer. Nil means no
	// spans.
	TracerProvider trace.TracerProvider

	// History receives the history of every document the drivers the
	// builders make reconcile (see package history); Run runs it (its
	// Recorder.Run) for as long as it runs, so do not run it yourself. Nil
	// means no history.
	History *history.Recorder

	// Mode says how replicas share the work. The zero value is [Single].
	Mode Mode

	// Leaser hands out the leases of LeaderElection and Sharded: usually the
	// store.Backend the controllers watch. Nil means Store. Required (or
	// Store) unless Mode is Single.
	// Reconciles of a leased key carry the lease's fence (store.WithFence),
	// so their writes to a backend that checks fences fail with
	// store.ErrFenced once the lease has passed to another replica. A fence
	// is checked against the store's own leases, so fenced writes need the
	// Leaser to be the store the reconcilers write to.
	Leaser store.Leaser

	// Unfenced runs the reconciles of leased keys without the lease's fence
	// on their context. It is for a Leaser that cannot check a fence in the
	// same atomic step as a write, such as the Kubernetes backend, which
	// refuses every fenced write: New rejects such a Leaser (one with
	// a FencingUnsupported() error method) unless Unfenced is set, so running
	// without fencing is always a stated choice. Leases still keep replicas
	// apart, and a replica stops its reconciles before its lease can pass to
	// another; what is lost is the store's refusal of a write that a replica
	// which just lost its lease still had in flight. Ignored in Single mode.
	Unfenced bool

	// Identity names this replica as a lease holder. It must be unique among
	// live replicas. Empty means the host name followed by a random suffix.
	Identity string

	// LeasePrefix is prepended to every lease name, so several managers can
	// share one store: the leader's, the shards', the members' and the
	// presence leases of the kinds the manager's drivers drive (see
	// [PresencePrefix]). Empty means none.
	LeasePrefix string

	// LeaseDuration is how long a lease lasts unless renewed: a dead
	// replica's work moves after at most LeaseDuration + RenewPeriod. Zero
	// means [DefaultLeaseDuration].
	LeaseDuration time.Duration

	// RenewPeriod is how often leases are renewed, a standby replica tries
	// to take the lead, and shards are rebalanced. A replica that could not
	// renew a lease for LeaseDuration − RenewPeriod stops the work it
	// covers. Zero means LeaseDuration / 3; it must be below
	// LeaseDuration / 2.
	RenewPeriod time.Duration

	// Shards is how many shards keys are hashed into in Sharded mode; every
	// replica must use the same number. Zero means [DefaultShards].
	Shards int

	// Logger receives the manager's logs, and those of the controllers,
	// drivers and history the builders make. Nil means no logs.
	Logger *zap.Logger

	// MetricsRegisterer receives the manager's metrics: in Single and
	// LeaderElection modes leader_election_master_status (client-go's gauge,
	// 1 while [Manager.IsLeader], labelled name="<LeasePrefix>leader"); in
	// Sharded mode tend_manager_owned_shards (a gauge: how many shards
	// [Manager.OwnedShards] holds); in LeaderElection and Sharded modes
	// tend_manager_lease_renew_failures_total (a counter: renewals of a held
	// lease that failed, refused by the store or unanswered). The tend_manager
	// series carry no label: to run several managers on one registry, give
	// each a registerer wrapped with labels of its own
	// (prometheus.WrapRegistererWith). The controllers, work queues and
	// drivers the builders make register theirs here too. Nil means no
	// metrics.
	MetricsRegisterer prometheus.Registerer

	// StuckReconcileAfter is how long one reconcile may run before
	// [Manager.CheckLiveness] reports the replica wedged; a controller whose
	// [Config.Timeout] is longer is allowed that. Zero means
	// [DefaultStuckReconcileAfter]; a negative value turns the check off.
	StuckReconcileAfter time.Duration

	// ReconcilesPerKey is how many of the last reconciles of each key the
	// manager keeps in memory, with their triggers, result and duration
	// ([Manager.Reconciles], GET /reconciles of [Manager.Handler]). Zero
	// means [DefaultReconcilesPerKey]; negative keeps none.
	ReconcilesPerKey int

	// ReconcileKeys is how many keys ReconcilesPerKey is kept for: those
	// reconciled most recently. Zero means [DefaultReconcileKeys]; negative
	// keeps none.
	ReconcileKeys int

	// Informers is an informer factory over the controllers' store for the
	// manager to run: give the same factory to the controllers' sources
	// (controller.For and the others), drivers (driver.Config.Cache) and
	// garbage collector (cascade.Config.Cache), so that each kind is
	// watched once however many controllers follow it, or to readers
	// outside the manager too. [Manager.Cache] returns it for its store.
	// Nil means none is given: Manager.Cache makes one per store. Run runs
	// the factories in every mode, so that a standby replica keeps its
	// cache warm; the controllers stop before they do.
	Informers *informer.Factory

	// OnLeadershipChange, when set, is called with this replica's
	// [Leadership] each time it changes: the lead taken or lost, a shard
	// taken, lost or given up, and Run starting or stopping in Single mode.
	// It is called from one goroutine that [Manager.Run] starts, one call at
	// a time, with no lock of the manager held, so it may call the manager's
	// methods; Run returns after the last call has returned, and that call
	// reports that nothing is held any more. Calls report the leadership as
	// it is when they are made, so a change that is undone before the
	// callback could be called may go unreported, and two calls never report
	// the same leadership in a row. The callback never delays the manager's
	// work, only the next call, but it must not wait for Run to return.
	OnLeadershipChange func(Leadership)
}

// Manager runs several controllers and coordinates replicas of them through
// a store's leases: see [Mode].
type Manager struct {
	shared     shared // what the builders give every controller they make
	mode       Mode
	leases     *lease.Keeper // nil without a Leaser
	identity   string
	prefix     string
	ttl        time.Duration
	renew      time.Duration
	shards     int
	stuckAfter time.Duration // 0 when reconciles are never reported stuck
	reconciles *reconcileLog // nil when the last reconciles are not kept
	onChange   func(Leadership)
	informers  *informer.Factory // Config.Informers; nil when none was given
	log        *zap.Logger       // a no-op logger when logging is off
	metrics    *managerMetrics   // nil when metrics are off
	notify     chan struct{}     // capacity 1: the leadership may have changed

	cachesMu sync.Mutex          // guards caches
	caches   []*informer.Factory // made by Cache, one per store

	state    atomic.Int32                  // stateIdle, stateRunning or stateStopping
	leading  atomic.Pointer[lease.Held]    // the leader lease while this replica leads
	sharding atomic.Pointer[shard.Sharder] // the sharder while Run runs in Sharded mode
	gates    atomic.Pointer[gates]         // the driven kinds' gates while Run runs

	// mu guards controllers and recorders, which the builders add to
	// until Run starts.
	mu          sync.Mutex
	controllers []*controller.Controller
	recorders   []*history.Recorder // run by Run; distinct
	kinds       map[string]string   // the kind each controller Drive built drives, by controller name
}

// The states of a [Manager].
const (
	stateIdle     = iota // Run is not running
	stateRunning         // Run is running and its context has not ended
	stateStopping        // Run is stopping
)

// New returns a manager configured by cfg. It starts nothing: see
// [Manager.Run]. Add controllers to it with [Drive] and [Manager.Cascade].
func New(cfg Config) (*Manager, error) {
	names := make(map[string]bool, len(cfg.Controllers))
	for i, c := range cfg.Controllers {
		if c == nil {
			return nil, fmt.Errorf("%w: Controllers[%d] is nil", ErrInvalidConfig, i)
		}
		if names[c.Name()] {
			return nil, fmt.Errorf("%w: two controllers are named %q", ErrInvalidConfig, c.Name())
		}
		names[c.Name()] = true
	}
	m := &Manager{
		controllers: append([]*controller.Controller(nil), cfg.Controllers...),
		mode:        cfg.Mode,
		identity:    cfg.Identity,
		prefix:      cfg.LeasePrefix,
		ttl:         cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration),
		shards:      cmp.Or(cfg.Shards, DefaultShards),
		onChange:    cfg.OnLeadershipChange,
		informers:   cfg.Informers,
		notify:      make(chan struct{}, 1),
	}
	if cfg.Leaser == nil && cfg.Store != nil {
		cfg.Leaser = cfg.Store
	}
	m.shared = shared{store: cfg.Store, log: cfg.Logger, reg: cfg.MetricsRegisterer, tracer: cfg.TracerProvider, history: cfg.History}
	if cfg.History != nil {
		m.recorders = []*history.Recorder{cfg.History}
	}
	m.reconciles = newReconcileLog(cfg.ReconcilesPerKey, cfg.ReconcileKeys)
	switch {
	case cfg.StuckReconcileAfter == 0:
		m.stuckAfter = DefaultStuckReconcileAfter
	case cfg.StuckReconcileAfter > 0:
		m.stuckAfter = cfg.StuckReconcileAfter
	}
	m.renew = cmp.Or(cfg.RenewPeriod, m.ttl/3)
	switch {
	case cfg.Mode < Single || cfg.Mode > Sharded:
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, cfg.Mode)
	case cfg.Mode != Single && cfg.Leaser == nil:
		return nil, fmt.Errorf("%w: %v needs a Leaser", ErrInvalidConfig, cfg.Mode)
	case cfg.LeaseDuration < 0 || cfg.RenewPeriod < 0 || cfg.Shards < 0:
		return nil, fmt.Errorf("%w: LeaseDuration, RenewPeriod and Shards must not be negative", ErrInvalidConfig)
	case m.renew <= 0 || 2*m.renew >= m.ttl:
		return nil, fmt.Errorf("%w: RenewPeriod %v must be positive and below LeaseDuration/2 (%v)", ErrInvalidConfig, m.renew, m.ttl/2)
	}
	if u, ok := cfg.Leaser.(interface{ FencingUnsupported() error }); ok && cfg.Mode != Single && !cfg.Unfenced {
		return nil, fmt.Errorf("%w: the Leaser cannot fence writes (%v): set Unfenced to run %v without fencing, or take leases from a store that fences",
			ErrInvalidConfig, u.FencingUnsupported(), cfg.Mode)
	}
	if m.identity == "" {
		host, _ := os.Hostname()
		m.identity = host + "-" + strconv.FormatUint(rand.Uint64()&0xffffffffffff, 36)
	}
	m.log = cmp.Or(cfg.Logger, zap.NewNop()).Named("manager").With(zap.String("identity", m.identity))
	if cfg.Leaser != nil {
		m.leases = lease.New(lease.Config{Leaser: cfg.Leaser, Identity: m.identity, Duration: m.ttl, Renew: m.renew,
			Unfenced: cfg.Unfenced, Log: m.log, OnRenewFailure: func() {
				if m.metrics != nil {
					m.metrics.renewFailures.Inc()
				}
			}})
	}
	if cfg.MetricsRegisterer != nil {
		mm, err := newManagerMetrics(cfg.MetricsRegisterer, m)
		if err != nil {
			return nil, err
		}
		m.metrics = mm
	}
	return m, nil
}

// Identity returns the name this replica holds leases under.
func (m *Manager) Identity() string { return m.identity }

// Run runs the controllers as the mode says until ctx ends or a controller
// fails, then stops them gracefully (see [Controller.Run]), gives up the
// leases it holds and returns once every goroutine it started has stopped.
// It returns nil after ctx ends, or the first controller's error.
//
// In every mode, for each [Driver] among its controllers' reconcilers, Run
// checks the driver's machine against the one recorded for its kind and
// the documents its store holds, then records the driver's registration
// and holds a presence lease in the driver's store until it returns; a
// kind whose machine would strand documents, or is older than the one
// recorded, does not run, and a kind stands down when a newer machine is
// recorded (see the package documentation).
//
// While it runs, [Manager.IsLeader], [Manager.OwnedShards],
// [Manager.CheckReadiness] and [Manager.CheckLiveness] report on it, and
// [Config.OnLeadershipChange] is told of each change.
//
// With LeaderElection, a replica that loses the lead stops its controllers
// at once (their reconciles' context is cancelled) and stands by again.
// With Sharded, a replica that loses or gives up a shard stops reconciling
// its keys at once; one that gains a shard queues its keys again by asking
// the sources that list ([Kind], [Owns], [Watches], [Resync]) to list again.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	switch {
	case len(m.controllers) == 0:
		m.mu.Unlock()
		return fmt.Errorf("%w: no controllers to run", ErrInvalidConfig)
	case !m.state.CompareAndSwap(stateIdle, stateRunning):
		m.mu.Unlock()
		return fmt.Errorf("%w: manager %s", ErrAlreadyRunning, m.identity)
	}
	recorders := slices.Clone(m.recorders)
	m.mu.Unlock()
	defer m.state.Store(stateIdle)
	// The recorders outlive the controllers, so that the entries of the
	// last reconciles are written.
	var recording sync.WaitGroup
	recordCtx, endRecording := context.WithCancel(context.WithoutCancel(ctx))
	for _, r := range recorders {
		recording.Go(func() { _ = r.Run(recordCtx) })
	}
	defer recording.Wait()
	defer endRecording()
	if m.leases != nil {
		m.leases.Reset()
	}
	stopped := make(chan struct{})
	watch := context.AfterFunc(ctx, func() {
		defer close(stopped)
		m.state.CompareAndSwap(stateRunning, stateStopping)
		m.changed()
	})
	var reporter sync.WaitGroup
	endReports := make(chan struct{})
	if m.onChange != nil {
		reporter.Go(func() { m.report(endReports) })
	}
	m.changed()

	endCaches := m.runCaches(ctx)

	// Each replica checks and records the machines of its drivers and
	// holds their presence leases for as long as it runs, in every mode: a
	// standby replica serves the kind as soon as it takes over. Each kind's
	// controllers wait until its machine is checked (see present).
	var presence sync.WaitGroup
	presenceCtx, endPresence := context.WithCancel(context.WithoutCancel(ctx))
	g, regs := newGates(m.controllerList())
	m.gates.Store(g)
	defer m.gates.Store(nil)
	for kind, r := range regs {
		presence.Go(func() { m.present(presenceCtx, r, g.kinds[kind]) })
	}

	var err error
	switch m.mode {
	case LeaderElection:
		err = m.runLeader(ctx)
	case Sharded:
		err = m.runSharded(ctx)
	default:
		err = m.runAll(ctx, context.WithoutCancel(ctx), nil)
	}

	endPresence()
	presence.Wait()
	endCaches()
	if !watch() {
		<-stopped
	}
	m.state.Store(stateStopping)
	close(endReports)
	reporter.Wait()
	return err
}

// Cache returns the informer cache over the store lw that the manager runs
// while [Manager.Run] runs: [Config.Informers] when it lists and watches
// lw, else a factory the manager makes for lw on the first call and keeps.
// Give it to what reads lw through a cache (controller.For and the other
// watching sources, driver.Config.Cache, cascade.Config.Cache), so that the
// store sees one watch per kind. A factory made while Run runs starts at the
// next Run. It returns nil for nil.
func (m *Manager) Cache(lw informer.ListWatcher) *informer.Factory {
	if lw == nil {
		return nil
	}
	if f, ok := lw.(*informer.Factory); ok {
		return f
	}
	if m.informers != nil && sameStore(m.informers.ListWatcher(), lw) {
		return m.informers
	}
	m.cachesMu.Lock()
	defer m.cachesMu.Unlock()
	for _, f := range m.caches {
		if sameStore(f.ListWatcher(), lw) {
			return f
		}
	}
	f, err := informer.NewFactory(lw, informer.FactoryConfig{})
	if err != nil {
		return nil // NewFactory fails only for a nil ListWatcher
	}
	m.caches = append(m.caches, f)
	return f
}

// sameStore reports whether a and b are the same store. A store whose type
// cannot be compared, or that holds a value that cannot, is never the same
// as another.
func sameStore(a, b informer.ListWatcher) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

// runCaches runs Config.Informers and the factories Cache made until the
// returned func is called, which returns once they all stopped. An
// informer's failure reaches the sources that subscribe to it, which stop
// their controllers: it is reported there.
func (m *Manager) runCaches(ctx context.Context) (stop func()) {
	m.cachesMu.Lock()
	fs := slices.Clone(m.caches)
	m.cachesMu.Unlock()
	if m.informers != nil {
		fs = append(fs, m.informers)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(func() { _ = f.Run(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// controllerList returns the manager's controllers.
func (m *Manager) controllerList() []*controller.Controller {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.controllers
}

// runAll runs every controller until stop ends or one fails.
func (m *Manager) runAll(stop, base context.Context, g controller.Gate) error {
	group, stop := errgroup.WithContext(stop)
	for _, c := range m.controllerList() {
		onReconciled := m.reconciles.recorder(m.kindOf(c.Name()))
		group.Go(func() error {
			return m.runGated(stop, c, func(ctx context.Context) error {
				return c.RunShared(ctx, controller.Shared{Reconciles: base, Gate: g, OnReconciled: onReconciled})
			})
		})
	}
	return group.Wait()
}

// runLeader stands by until it takes the lead, runs the controllers while it
// holds it, and stands by again when it loses it.
func (m *Manager) runLeader(ctx context.Context) error {
	name := m.prefix + "leader"
	for {
		h, err := m.leases.Acquire(ctx, context.WithoutCancel(ctx), name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, store.ErrLeaseHeld) {
				m.log.Warn("taking the lead", zap.Error(err))
			}
			if wait.Sleep(ctx, m.renew) != nil {
				return nil
			}
			continue
		}
		m.log.Info("leading", zap.Int64("fence", h.Current().Fence))
		err = m.lead(ctx, h)
		if err != nil || ctx.Err() != nil {
			return err
		}
		m.log.Warn("lost the lead; standing by", zap.Error(context.Cause(h.Context())))
	}
}

// lead runs the controllers while h is held.
func (m *Manager) lead(ctx context.Context, h *lease.Held) error {
	stop, cancelStop := context.WithCancel(ctx)
	defer cancelStop()
	context.AfterFunc(h.Context(), cancelStop)
	m.leading.Store(h)
	m.changed()
	lostOrGivenUp := make(chan struct{})
	context.AfterFunc(h.Context(), func() {
		m.changed()
		close(lostOrGivenUp)
	})
	defer func() {
		<-lostOrGivenUp
		m.leading.Store(nil)
	}()

	var renewals sync.WaitGroup
	renewals.Go(func() {
		t := time.NewTicker(m.renew)
		defer t.Stop()
		for {
			select {
			case <-h.Context().Done():
				return
			case <-t.C:
				m.leases.Keep(h.Context(), h)
			}
		}
	})
	err := m.runAll(stop, h.Context(), nil)
	lost := h.Lost()
	h.End(lease.ErrGivenUp)
	renewals.Wait()
	if !lost {
		m.leases.Release(ctx, h.Current())
	}
	return err
}

// runSharded runs the controllers behind a sharder, which holds shards while
// they run and gives them up after they stopped.
func (m *Manager) runSharded(ctx context.Context) error {
	s := shard.New(shard.Config{Leases: m.leases, Shards: m.shards, Prefix: m.prefix, Identity: m.identity, Log: m.log, OnChange: m.changed})
	m.sharding.Store(s)
	defer m.sharding.Store(nil)
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	var loop sync.WaitGroup
	loop.Go(func() { s.Run(ctx, life) })
	err := m.runAll(ctx, context.WithoutCancel(ctx), s)
	end()
	loop.Wait()
	return err
}
