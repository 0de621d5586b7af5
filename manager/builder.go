package manager

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// shared is what a [Manager] gives every controller its builders make.
type shared struct {
	store   store.Backend
	log     *zap.Logger
	reg     prometheus.Registerer
	tracer  trace.TracerProvider
	history *history.Recorder
}

// kindAdder is a store that can be given kinds after it was made
// (backends/memory, backends/postgres).
type kindAdder interface {
	AddKinds(kinds ...string) error
}

// Options are the settings of one controller a builder makes. A zero field
// means the [Manager]'s (Logger, MetricsRegisterer, TracerProvider,
// History) or the documented default of [controller.Config].
type Options struct {
	// Workers is how many keys are reconciled at once. Zero means 1 (for
	// [Manager.Cascade], cascade.DefaultWorkers).
	Workers int
	// RateLimiter decides how long a key waits before it is retried after
	// an error; see controller.Config.RateLimiter.
	RateLimiter workqueue.RateLimiter[string]
	// Timeout bounds each reconcile; see controller.Config.Timeout.
	Timeout time.Duration
	// ShutdownGracePeriod; see controller.Config.ShutdownGracePeriod.
	ShutdownGracePeriod time.Duration
	// Cache replaces the manager's informer cache ([Manager.Cache] of
	// [Config.Store]) as the cache this controller's sources, driver or
	// garbage collector read. It must run while the controller does: give
	// it to the manager as [Config.Informers], or run it yourself.
	Cache *informer.Factory
	// Logger replaces the manager's logger for this controller.
	Logger *zap.Logger
	// MetricsRegisterer replaces the manager's registerer for this
	// controller.
	MetricsRegisterer prometheus.Registerer
	// TracerProvider replaces the manager's tracer provider for this
	// controller.
	TracerProvider trace.TracerProvider
	// History replaces the manager's history recorder for this
	// controller's driver; Run runs it too.
	History *history.Recorder
	// Group, GroupWeight and MaxInFlightPerGroup serve the controller's
	// keys fairly across groups (its tenants, say); see
	// controller.Config.Group. The cascade's collector has no groups.
	Group               func(key string) string
	GroupWeight         func(group string) int
	MaxInFlightPerGroup int
}

// with returns o with its zero telemetry fields taken from s, and its cache
// from m.
func (o Options) with(m *Manager) Options {
	s := m.shared
	inherit(&o.Logger, &o.MetricsRegisterer, &o.TracerProvider, &o.History, s.log, s.reg, s.tracer, s.history)
	if o.Cache == nil {
		o.Cache = m.Cache(s.store)
	}
	return o
}

// inherit sets each of the telemetry settings log, reg, tp and rec that is
// zero to the one given after it.
func inherit(log **zap.Logger, reg *prometheus.Registerer, tp *trace.TracerProvider, rec **history.Recorder,
	l *zap.Logger, r prometheus.Registerer, t trace.TracerProvider, h *history.Recorder) {
	*log = cmp.Or(*log, l)
	if *reg == nil {
		*reg = r
	}
	if *tp == nil {
		*tp = t
	}
	*rec = cmp.Or(*rec, h)
}

// controllerConfig returns the configuration of a controller named name.
func (o Options) controllerConfig(name string, r controller.Reconciler, sources []controller.Source) controller.Config {
	return controller.Config{Name: name, Reconciler: r, Sources: sources, Workers: o.Workers, RateLimiter: o.RateLimiter,
		Timeout: o.Timeout, ShutdownGracePeriod: o.ShutdownGracePeriod, Logger: o.Logger,
		MetricsRegisterer: o.MetricsRegisterer, TracerProvider: o.TracerProvider,
		Group: o.Group, GroupWeight: o.GroupWeight, MaxInFlightPerGroup: o.MaxInFlightPerGroup}
}

// watch is a kind a builder's controller watches, with how its documents
// map to keys.
type watch struct {
	kind string
	keys func(store.Document) []string
}

// DriveBuilder builds the controller that drives one kind with a machine:
// see [Drive]. Its methods record and return the builder; every
// configuration error is returned by [DriveBuilder.Complete].
type DriveBuilder[Spec, Status any] struct {
	m          *Manager
	kind       string
	name       string
	codec      store.Codec
	cfg        driver.Config[Spec, Status]
	steps      []driver.Step[Spec, Status]
	conditions []driver.Condition[Spec, Status]
	owns       []string
	watches    []watch
	opts       Options
	machine    func() (machine any, steps, conditions []string, err error)                                                                 // builds the machine
	newDriver  func(c *store.Collection[Spec, Status], machine any, cfg driver.Config[Spec, Status]) (*driver.Driver[Spec, Status], error) // driver.New with the machine's types
}

// Drive begins the controller that drives the documents of the kind
// def.Name with the machine def declares, under m: give it the machine's
// steps and conditions, the kinds it owns or watches, and finish with
// [DriveBuilder.Complete], which adds the controller to m:
//
//	servers, err := manager.Drive[ServerSpec, ServerStatus](mgr, serverMachine()).
//		Steps(boot, halt).Conditions(running).Complete()
//
// The driver's source, the machine's registration (package registry) and
// the kinds the store needs follow from it: the driven kind, its history
// kind (with a history recorder) and [registry.Kind]; see [Config.Store].
// The controller is named after the kind unless [DriveBuilder.Named] says
// otherwise, and gets the manager's logger, metrics registerer, tracer
// provider and history recorder unless [DriveBuilder.WithOptions] replaces
// them. Spec and Status are the document's types (see [driver.New]); the
// machine's State and Phase are inferred from def.
func Drive[Spec driver.HasIntent[S], Status any, S, P comparable](m *Manager, def statemachine.Definition[S, P]) *DriveBuilder[Spec, Status] {
	return &DriveBuilder[Spec, Status]{
		m:    m,
		kind: def.Name,
		machine: func() (any, []string, []string, error) {
			sm, err := statemachine.New(def)
			if err != nil {
				return nil, nil, nil, err
			}
			return sm, sm.Steps(), sm.Conditions(), nil
		},
		newDriver: func(c *store.Collection[Spec, Status], machine any, cfg driver.Config[Spec, Status]) (*driver.Driver[Spec, Status], error) {
			return driver.New(c, machine.(*statemachine.Machine[S, P]), cfg)
		},
	}
}

// Kind sets the kind driven. The default is the machine's name.
func (b *DriveBuilder[Spec, Status]) Kind(kind string) *DriveBuilder[Spec, Status] {
	b.kind = kind
	return b
}

// Named names the controller, in logs, metrics and the manager. The default
// is the kind.
func (b *DriveBuilder[Spec, Status]) Named(name string) *DriveBuilder[Spec, Status] {
	b.name = name
	return b
}

// Codec sets how the documents' Spec and Status are encoded; see
// store.CollectionConfig. The default is JSON.
func (b *DriveBuilder[Spec, Status]) Codec(c store.Codec) *DriveBuilder[Spec, Status] {
	b.codec = c
	return b
}

// Steps binds the machine's steps to their actions. Every step the machine
// names must be bound, here or in the map of [DriveBuilder.WithDriver].
func (b *DriveBuilder[Spec, Status]) Steps(steps ...driver.Step[Spec, Status]) *DriveBuilder[Spec, Status] {
	b.steps = append(b.steps, steps...)
	return b
}

// Conditions binds the conditions the machine's completions and health
// require to their observers, as [DriveBuilder.Steps] binds steps.
func (b *DriveBuilder[Spec, Status]) Conditions(conditions ...driver.Condition[Spec, Status]) *DriveBuilder[Spec, Status] {
	b.conditions = append(b.conditions, conditions...)
	return b
}

// Owns queues a document of the driven kind when a document of one of
// kinds that it owns changes (controller.Owns): the kinds its steps create
// or retire.
func (b *DriveBuilder[Spec, Status]) Owns(kinds ...string) *DriveBuilder[Spec, Status] {
	b.owns = append(b.owns, kinds...)
	return b
}

// Watches queues the keys keys returns for each changed document of kind
// (controller.Watches).
func (b *DriveBuilder[Spec, Status]) Watches(kind string, keys func(doc store.Document) []string) *DriveBuilder[Spec, Status] {
	b.watches = append(b.watches, watch{kind: kind, keys: keys})
	return b
}

// Workers sets how many documents are reconciled at once. Zero means 1.
func (b *DriveBuilder[Spec, Status]) Workers(n int) *DriveBuilder[Spec, Status] {
	b.opts.Workers = n
	return b
}

// Group serves the documents fairly across the groups group names from
// their keys (a tenant prefix, say), with at most maxInFlight of one group
// reconciled at once (zero: no cap): one tenant's backlog then delays
// another's documents by the other tenants' turns, not by its size. See
// controller.Config.Group; [Options] sets group weights too.
func (b *DriveBuilder[Spec, Status]) Group(group func(key string) string, maxInFlight int) *DriveBuilder[Spec, Status] {
	b.opts.Group, b.opts.MaxInFlightPerGroup = group, maxInFlight
	return b
}

// WithOptions sets the controller's options, overriding the manager's
// shared settings where a field is set. It replaces the Workers and Group
// set before.
func (b *DriveBuilder[Spec, Status]) WithOptions(o Options) *DriveBuilder[Spec, Status] {
	b.opts = o
	return b
}

// WithDriver sets the rest of the driver's configuration: timers,
// intervals, backoff, finalizer, operation ids, and steps or observers
// bound by name. Its telemetry fields, when nil, are the controller's; a
// History recorder set here is not run by the manager, but by the caller.
func (b *DriveBuilder[Spec, Status]) WithDriver(cfg driver.Config[Spec, Status]) *DriveBuilder[Spec, Status] {
	b.cfg = cfg
	return b
}

// Complete builds the driver and its controller and adds the controller
// to the manager. It returns every configuration error found, joined, each
// matching [ErrInvalidConfig] (and, where it has one, its own sentinel:
// driver.ErrInvalidConfig, a statemachine error, store.ErrUnknownKind…):
// a machine that does not build, a step or condition of the machine left
// unbound or bound twice, an unknown or malformed kind, a controller name
// already taken, a negative setting, a manager without a Store or already
// running. On error nothing is added to the manager, though the store may
// have been given kinds.
func (b *DriveBuilder[Spec, Status]) Complete() (*driver.Driver[Spec, Status], error) {
	m := b.m
	o := b.opts.with(m)
	name := cmp.Or(b.name, b.kind)
	what := "controller " + name
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	dcfg := b.cfg.Bind(b.steps, b.conditions)
	machine, steps, conditions, err := b.machine()
	if err != nil {
		fail(err)
	} else {
		fail(unbound("step", steps, dcfg.Steps))
		fail(unbound("condition", conditions, dcfg.Observers))
	}
	need := []string{b.kind, registry.Kind}
	if o.History != nil {
		need = append(need, history.KindFor(b.kind))
	}
	need = append(need, b.owns...)
	for _, w := range b.watches {
		if w.keys == nil {
			fail(fmt.Errorf("Watches(%q) has no keys function", w.kind))
		}
		need = append(need, w.kind)
	}
	fail(m.checkController(name, o))
	fail(m.provide(need))
	if len(errs) > 0 {
		return nil, invalid(what, errs)
	}

	coll, err := store.NewCollection[Spec, Status](m.shared.store, b.kind, store.CollectionConfig{Codec: b.codec})
	if err != nil {
		return nil, invalid(what, []error{err})
	}
	var nolog *zap.Logger // a driver logs through its controller
	inherit(&nolog, &dcfg.MetricsRegisterer, &dcfg.TracerProvider, &dcfg.History, nil, o.MetricsRegisterer, o.TracerProvider, o.History)
	if dcfg.Cache == nil {
		dcfg.Cache = o.Cache
	}
	d, err := b.newDriver(coll, machine, dcfg)
	if err != nil {
		return nil, invalid(what, []error{err})
	}
	sources := []controller.Source{d.Source()}
	for _, k := range b.owns {
		sources = append(sources, controller.Owns(o.Cache, k, b.kind))
	}
	for _, w := range b.watches {
		sources = append(sources, controller.Watches(o.Cache, w.kind, w.keys))
	}
	c, err := controller.New(o.controllerConfig(name, d, sources))
	if err != nil {
		return nil, invalid(what, []error{err})
	}
	// A recorder given in the driver's own configuration is the caller's
	// to run; the manager's, or one of the options, the manager runs.
	run := o.History
	if b.cfg.History != nil {
		run = nil
	}
	if err := m.add(c, run); err != nil {
		return nil, invalid(what, []error{err})
	}
	m.drives(name, b.kind)
	return d, nil
}

// unbound returns the error naming the declared names of what that bound
// lacks and the names bound that the machine does not declare, or nil.
// driver.New checks them too, and a name bound twice.
func unbound[F any](what string, declared []string, bound map[string]F) error {
	var errs []error
	for _, n := range declared {
		if _, ok := bound[n]; !ok {
			errs = append(errs, fmt.Errorf("%s %q of the machine is not bound", what, n))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(bound)) {
		if !slices.Contains(declared, n) {
			errs = append(errs, fmt.Errorf("%s %q is bound but is no %[1]s of the machine", what, n))
		}
	}
	return errors.Join(errs...)
}

// invalid returns the error of a builder of what that found errs.
func invalid(what string, errs []error) error {
	return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, what, errors.Join(errs...))
}

// checkController returns the error of a controller named name with
// options o that the manager cannot take, or nil.
func (m *Manager) checkController(name string, o Options) error {
	var errs []error
	if m.shared.store == nil {
		errs = append(errs, errors.New("the manager has no Store (Config.Store)"))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers %d is negative", o.Workers))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.Load() != stateIdle {
		errs = append(errs, fmt.Errorf("%w: controllers cannot be added while it runs", ErrAlreadyRunning))
	}
	if slices.ContainsFunc(m.controllers, func(c *controller.Controller) bool { return c.Name() == name }) {
		errs = append(errs, fmt.Errorf("two controllers are named %q", name))
	}
	return errors.Join(errs...)
}

// provide makes sure the manager's store holds kinds: it gives a store that
// can add kinds those it lacks, and returns an error naming those another
// store lacks.
func (m *Manager) provide(kinds []string) error {
	b := m.shared.store
	if b == nil {
		return nil
	}
	var errs, missing []error
	var add []string
	for _, k := range kinds {
		switch {
		case store.ValidateKind(k) != nil:
			errs = append(errs, fmt.Errorf("kind %q: %w", k, store.ValidateKind(k)))
		case slices.Contains(b.Kinds(), k) || slices.Contains(add, k):
		default:
			add = append(add, k)
			missing = append(missing, fmt.Errorf("kind %q: %w", k, store.ErrUnknownKind))
		}
	}
	if len(errs) > 0 || len(add) == 0 {
		return errors.Join(errs...)
	}
	a, ok := b.(kindAdder)
	if !ok {
		return fmt.Errorf("the store lacks kinds it cannot be given (list them in its configuration): %w", errors.Join(missing...))
	}
	return a.AddKinds(add...)
}

// Controller returns the manager's controller called name, nil if it has
// none: one its builders made, or one of Config.Controllers.
func (m *Manager) Controller(name string) *controller.Controller {
	for _, c := range m.controllerList() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// add adds c to the manager, and rec, when set, to the recorders Run runs.
func (m *Manager) add(c *controller.Controller, rec *history.Recorder) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.Load() != stateIdle {
		return fmt.Errorf("%w: controllers cannot be added while it runs", ErrAlreadyRunning)
	}
	if slices.ContainsFunc(m.controllers, func(o *controller.Controller) bool { return o.Name() == c.Name() }) {
		return fmt.Errorf("two controllers are named %q", c.Name())
	}
	m.controllers = append(m.controllers, c)
	if rec != nil && !slices.Contains(m.recorders, rec) {
		m.recorders = append(m.recorders, rec)
	}
	return nil
}

// CascadeBuilder builds the garbage collector of owner references (package
// cascade) as a controller of its [Manager]: see [Manager.Cascade].
type CascadeBuilder struct {
	m    *Manager
	cfg  cascade.Config
	opts Options
}

// Cascade begins the garbage collector of the manager's store (see
// cascade.NewController), with the manager's logger, metrics registerer
// and tracer provider; finish it with [CascadeBuilder.Complete], which adds
// it to the manager.
func (m *Manager) Cascade() *CascadeBuilder { return &CascadeBuilder{m: m} }

// Kinds sets the kinds it watches: every kind whose documents can be
// owners or dependents. None means every kind the store holds when
// Complete is called, so call it after the drivers are complete.
func (b *CascadeBuilder) Kinds(kinds ...string) *CascadeBuilder {
	b.cfg.Kinds = append(b.cfg.Kinds, kinds...)
	return b
}

// Named names the controller. The default is cascade.DefaultName.
func (b *CascadeBuilder) Named(name string) *CascadeBuilder {
	b.cfg.Name = name
	return b
}

// ResyncPeriod sets how often every document is looked at again; see
// cascade.Config.ResyncPeriod.
func (b *CascadeBuilder) ResyncPeriod(d time.Duration) *CascadeBuilder {
	b.cfg.ResyncPeriod = d
	return b
}

// Workers sets how many documents are processed at once. Zero means
// cascade.DefaultWorkers.
func (b *CascadeBuilder) Workers(n int) *CascadeBuilder {
	b.opts.Workers = n
	return b
}

// WithOptions overrides the manager's logger, metrics registerer and tracer
// provider, and sets Workers; the other fields of o do not apply to the
// garbage collector.
func (b *CascadeBuilder) WithOptions(o Options) *CascadeBuilder {
	b.opts = o
	return b
}

// Complete builds the garbage collector and adds it to the manager. It
// returns every configuration error found, joined, each matching
// [ErrInvalidConfig]: an unknown or malformed kind (a store that can add
// kinds is given them), a name already taken, a negative setting, a
// manager without a Store or already running.
func (b *CascadeBuilder) Complete() (*controller.Controller, error) {
	m := b.m
	o := b.opts.with(m)
	cfg := b.cfg
	cfg.Backend, cfg.Workers = m.shared.store, o.Workers
	cfg.Logger, cfg.MetricsRegisterer, cfg.TracerProvider, cfg.Cache = o.Logger, o.MetricsRegisterer, o.TracerProvider, o.Cache
	name := cmp.Or(cfg.Name, cascade.DefaultName)
	what := "controller " + name
	var errs []error
	for _, err := range []error{m.checkController(name, o), m.provide(cfg.Kinds)} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, invalid(what, errs)
	}
	c, err := cascade.NewController(cfg)
	if err != nil {
		return nil, invalid(what, []error{err})
	}
	if err := m.add(c, nil); err != nil {
		return nil, invalid(what, []error{err})
	}
	return c, nil
}
