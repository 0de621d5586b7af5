package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tendhq/tend/workqueue"
	"github.com/tendhq/tend/workqueue/queueprom"
)

// DefaultShutdownGracePeriod is how long a stopping controller lets in-flight
// reconciles finish when [Config.ShutdownGracePeriod] is zero.
const DefaultShutdownGracePeriod = 30 * time.Second

// Errors returned by [New] and [Controller.Run].
var (
	// ErrInvalidConfig is returned, wrapped with the reason, by [New] when
	// a configuration value is missing or out of range.
	ErrInvalidConfig = errors.New("controller: invalid config")
	// ErrAlreadyRunning is returned by Run and RunShared when the
	// controller is already running.
	ErrAlreadyRunning = errors.New("controller: already running")
)

// Config configures a [Controller].
type Config struct {
	// Name identifies the controller in logs (field "controller"), in the
	// controller label of its metrics and in the name label of its work
	// queue's metrics. Required.
	Name string

	// Reconciler is called with each queued key. Required.
	Reconciler Reconciler

	// Sources queue keys; Run starts each one. See [For], [Owns],
	// [Watches], [Resync] and [Channel].
	Sources []Source

	// Workers is how many keys are reconciled at once. Zero means 1.
	Workers int

	// RateLimiter decides how long a key waits before it is retried after an
	// error. Nil means [workqueue.DefaultControllerRateLimiter].
	RateLimiter workqueue.RateLimiter[string]

	// Timeout bounds each reconcile: its context ends after Timeout. Zero
	// means no bound.
	Timeout time.Duration

	// ShutdownGracePeriod is how long a stopping controller lets in-flight
	// reconciles finish before it cancels their context. Zero means
	// [DefaultShutdownGracePeriod].
	ShutdownGracePeriod time.Duration

	// Logger receives the controller's logs; it is named after the
	// controller. Nil means no logs.
	Logger *zap.Logger

	// MetricsRegisterer receives the controller's metrics, under
	// controller-runtime's names, and its work queue's. Nil means no metrics.
	MetricsRegisterer prometheus.Registerer

	// TracerProvider receives a span for each reconcile ([SpanReconcile]),
	// the parent of whatever the reconciler does with its context. Give the
	// same provider to the [driver.Config] of a driver for spans of its steps
	// and observers. Nil means no spans, and none of their cost.
	TracerProvider trace.TracerProvider

	// Group, when set, names the group of a key (its tenant, say): ready
	// keys are served fairly across groups, so one group's backlog delays
	// another group's keys by at most the other groups' weights, not by its
	// size (see workqueue.Config.Group). It is called once each time a key
	// enters the queue and must not block. Nil means no groups.
	Group func(key string) string

	// GroupWeight gives the weight of a group: how many of its keys are
	// served in a row when its turn comes, within [1, 65536]. Nil means
	// every group weighs 1. It needs Group.
	GroupWeight func(group string) int

	// MaxInFlightPerGroup caps how many keys of one group are reconciled at
	// once; zero means no cap beyond Workers. It needs Group.
	MaxInFlightPerGroup int
}

// Controller reconciles the keys its sources queue, with a pool of workers
// over one work queue: see the package documentation for the rules.
type Controller struct {
	name      string
	rec       Reconciler
	sources   []Source
	workers   int
	limiter   workqueue.RateLimiter[string]
	timeout   time.Duration
	grace     time.Duration
	log       *zap.Logger // a no-op logger when logging is off
	reg       prometheus.Registerer
	metrics   *metrics     // nil when metrics are off
	tracer    trace.Tracer // nil when tracing is off
	idPrefix  string
	idCounter atomic.Uint64
	running   atomic.Bool
	current   atomic.Pointer[runHealth] // the health of the run in progress; nil when not running
	group     func(string) string
	weight    func(string) int
	perGroup  int
}

// New returns a controller configured by cfg. It starts nothing: see
// [Controller.Run]. With a MetricsRegisterer it registers the controller's
// metrics, so the same name cannot be used twice with one registry.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Name == "":
		return nil, fmt.Errorf("%w: Name is required", ErrInvalidConfig)
	case cfg.Reconciler == nil:
		return nil, fmt.Errorf("%w: Reconciler is required", ErrInvalidConfig)
	case cfg.Workers < 0:
		return nil, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v is negative", ErrInvalidConfig, cfg.Timeout)
	case cfg.ShutdownGracePeriod < 0:
		return nil, fmt.Errorf("%w: ShutdownGracePeriod %v is negative", ErrInvalidConfig, cfg.ShutdownGracePeriod)
	case cfg.MaxInFlightPerGroup < 0:
		return nil, fmt.Errorf("%w: MaxInFlightPerGroup %d is negative", ErrInvalidConfig, cfg.MaxInFlightPerGroup)
	case cfg.Group == nil && (cfg.GroupWeight != nil || cfg.MaxInFlightPerGroup != 0):
		return nil, fmt.Errorf("%w: GroupWeight and MaxInFlightPerGroup need Group", ErrInvalidConfig)
	}
	if i := slices.Index(cfg.Sources, nil); i >= 0 {
		return nil, fmt.Errorf("%w: Sources[%d] is nil", ErrInvalidConfig, i)
	}
	c := &Controller{
		name:     cfg.Name,
		rec:      cfg.Reconciler,
		sources:  slices.Clone(cfg.Sources),
		workers:  max(cfg.Workers, 1),
		limiter:  cfg.RateLimiter,
		timeout:  cfg.Timeout,
		grace:    cmp.Or(cfg.ShutdownGracePeriod, DefaultShutdownGracePeriod),
		reg:      cfg.MetricsRegisterer,
		tracer:   newTracer(cfg.TracerProvider),
		idPrefix: strconv.FormatUint(uint64(rand.Uint32()), 16) + "-",
		group:    cfg.Group,
		weight:   cfg.GroupWeight,
		perGroup: cfg.MaxInFlightPerGroup,
	}
	if c.limiter == nil {
		c.limiter = workqueue.DefaultControllerRateLimiter[string]()
	}
	c.log = cmp.Or(cfg.Logger, zap.NewNop()).Named(cfg.Name).With(zap.String("controller", cfg.Name))
	if c.reg != nil {
		m, err := newMetrics(c.reg, cfg.Name)
		if err != nil {
			return nil, err
		}
		m.workers.Set(float64(c.workers))
		c.metrics = m
	}
	return c, nil
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.name }

// Run starts the sources and the workers and blocks until ctx ends or a
// source fails. It then stops the sources, lets in-flight reconciles finish
// within [Config.ShutdownGracePeriod] (keys still waiting are dropped; their
// context is cancelled when the period ends) and returns once every goroutine
// it started has stopped. It returns nil after ctx ends, or the error of the
// source that failed. Run may be called again after it returns, but not while
// it runs ([ErrAlreadyRunning]).
//
// Sources given an informer.Factory read through its cache, which must run
// meanwhile (a Manager of package manager runs its own); sources given a
// store run an informer each for as long as they run.
func (c *Controller) Run(ctx context.Context) error {
	return c.run(ctx, context.WithoutCancel(ctx), nil, nil)
}

// Gate admits the keys a replica may reconcile: a manager that shards keys
// (package manager) runs each controller behind one ([Controller.RunShared]).
type Gate interface {
	// Owns reports whether this replica may reconcile key now.
	Owns(key string) bool
	// Admit returns the context to reconcile key in (derived from parent,
	// carrying the key's fence and cancelled when its lease is lost) and a
	// func to call when the reconcile returns; ok is false when the replica
	// may not reconcile key.
	Admit(parent context.Context, key string) (ctx context.Context, done func(), ok bool)
	// Gained returns a channel that receives a value whenever the replica
	// gained keys whose sources must list them again, and a func that ends
	// the subscription.
	Gained() (<-chan struct{}, func())
}

// Shared says how a manager (package manager) runs a controller among
// others: see [Controller.RunShared].
type Shared struct {
	// Reconciles is the parent of every reconcile's context: its values
	// (a lease's fence) reach the reconciler, and its end cancels the
	// reconciles in flight at once. Nil means the context given to
	// RunShared, without its cancellation.
	Reconciles context.Context
	// Gate admits the keys this replica may reconcile; nil admits every key.
	Gate Gate
	// OnReconciled, when set, is called by the worker after each
	// reconcile with what it was and how it ended: a manager keeps the
	// last reconciles of each key. It must not block, and must not keep
	// r.Triggers beyond the call.
	OnReconciled func(r Reconciled)
}

// Reconciled describes a reconcile that ended, for [Shared.OnReconciled].
type Reconciled struct {
	// Key is the key reconciled; ReconcileID the reconcile's id
	// ([ReconcileIDFrom]).
	Key, ReconcileID string
	// Triggers and Dropped are the reconcile's triggers ([TriggersFrom]):
	// Triggers is valid only during the call.
	Triggers []Trigger
	Dropped  int
	// Start is when the reconciler was called; Duration how long it ran.
	Start    time.Time
	Duration time.Duration
	// Result is success, requeue_after, error, terminal or panic (the
	// tend.reconcile.result attribute); Err the reconcile's error.
	Result string
	Err    error
}

// RunShared runs the controller as [Controller.Run] does, as one of the
// controllers of a manager (package manager): its reconciles derive from
// s.Reconciles and only the keys s.Gate admits are reconciled. ctx ending
// begins a graceful shutdown, as for Run.
func (c *Controller) RunShared(ctx context.Context, s Shared) error {
	base := s.Reconciles
	if base == nil {
		base = context.WithoutCancel(ctx)
	}
	return c.run(ctx, base, s.Gate, s.OnReconciled)
}

// Reconciler returns the controller's reconciler.
func (c *Controller) Reconciler() Reconciler { return c.rec }

// Timeout returns the bound of each reconcile ([Config.Timeout]); zero
// when none.
func (c *Controller) Timeout() time.Duration { return c.timeout }

// OldestReconcile returns the key and start time of the reconcile that has
// been running the longest; ok is false when none runs.
func (c *Controller) OldestReconcile() (key string, start time.Time, ok bool) {
	h := c.current.Load()
	if h == nil {
		return "", time.Time{}, false
	}
	return h.oldest()
}

// run is Run with the stop signal split from the reconciles' context: stop
// ending begins a graceful shutdown; base is the parent of every reconcile's
// context (its values reach the reconciler, its end cancels reconciles at
// once). g filters keys when not nil.
func (c *Controller) run(stop, base context.Context, g Gate, onReconciled func(Reconciled)) error {
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %s", ErrAlreadyRunning, c.name)
	}
	defer c.running.Store(false)
	qc := workqueue.Config[string]{Name: c.name, RateLimiter: c.limiter,
		Group: c.group, GroupWeight: c.weight, MaxInFlightPerGroup: c.perGroup}
	if c.reg != nil {
		qc.Metrics = queueprom.New(queueprom.Config{Registerer: c.reg})
	}
	q, err := workqueue.New(qc)
	if err != nil {
		return fmt.Errorf("controller %s: %w", c.name, err)
	}
	r := &runner{c: c, q: q, gate: g, health: newRunHealth(c.sources), onReconciled: onReconciled}
	c.current.Store(r.health)
	defer c.current.Store(nil)

	work, cancelWork := context.WithCancelCause(base)
	defer cancelWork(nil)
	sourceCtx, stopSources := context.WithCancelCause(stop)
	defer stopSources(nil)

	var gained <-chan struct{}
	if g != nil {
		// Subscribe before any source lists, so that no gain between a
		// source's first list and the subscription goes unnoticed.
		var unsubscribe func()
		gained, unsubscribe = g.Gained()
		defer unsubscribe()
	}
	var sources sync.WaitGroup
	var failMu sync.Mutex // guards failed
	var failed []error
	for _, s := range c.sources {
		sources.Go(func() {
			if err := s.Start(sourceCtx, r); err != nil && sourceCtx.Err() == nil {
				failMu.Lock()
				failed = append(failed, err)
				failMu.Unlock()
				stopSources(err)
			}
		})
	}
	if g != nil {
		sources.Go(func() { r.relistOnGain(sourceCtx, gained) })
	}
	var workers sync.WaitGroup
	for range c.workers {
		workers.Go(func() {
			for r.next(work) {
			}
		})
	}
	c.log.Info("controller started", zap.Int("workers", c.workers), zap.Int("sources", len(c.sources)))

	<-sourceCtx.Done()
	r.stopping.Store(true)
	stopSources(nil)
	sources.Wait()
	grace, cancelGrace := context.WithTimeout(context.WithoutCancel(stop), c.grace)
	if err := q.ShutDownWithDrain(grace); err != nil {
		cancelWork(errShutdownTimeout)
		c.log.Warn("shutdown grace period over: cancelling in-flight reconciles", zap.Duration("gracePeriod", c.grace))
	}
	cancelGrace()
	workers.Wait()
	c.log.Info("controller stopped")
	return errors.Join(failed...)
}

// debug returns the controller's logger when it logs at debug level, else
// nil, so that debug fields are built only when they will be written.
func (c *Controller) debug() *zap.Logger {
	if c.log.Core().Enabled(zapcore.DebugLevel) {
		return c.log
	}
	return nil
}

var errShutdownTimeout = errors.New("controller: shutdown grace period over")

// errTimeout is the cause of a reconcile context that ran out of Config.Timeout.
var errTimeout = errors.New("controller: reconcile timed out")

// runner is the state of one Run; it is the [Enqueuer] handed to sources.
type runner struct {
	c        *Controller
	q        *workqueue.Queue[string]
	gate     Gate
	stopping atomic.Bool // set once shutdown began: workers drop the keys still queued
	health   *runHealth
	// onReconciled is Shared.OnReconciled; nil when not set.
	onReconciled func(Reconciled)
}

// Enqueue implements [Enqueuer].
func (r *runner) Enqueue(key, reason string) {
	if r.gate != nil && !r.gate.Owns(key) {
		return
	}
	if l := r.c.debug(); l != nil {
		l.Debug("queued", zap.String("key", key), zap.String("reason", reason))
	}
	r.q.Add(key)
}

// EnqueueLow implements [Enqueuer].
func (r *runner) EnqueueLow(key, reason string) {
	if r.gate != nil && !r.gate.Owns(key) {
		return
	}
	if l := r.c.debug(); l != nil {
		l.Debug("queued", zap.String("key", key), zap.String("reason", reason), zap.Int("priority", LowPriority))
	}
	r.q.AddWithOptions(key, workqueue.AddOptions{Priority: LowPriority})
}

// EnqueueTrigger implements [Enqueuer].
func (r *runner) EnqueueTrigger(key string, t Trigger, priority int) {
	if r.gate != nil && !r.gate.Owns(key) {
		return
	}
	if l := r.c.debug(); l != nil {
		if priority != 0 {
			l.Debug("queued", zap.String("key", key), zap.Stringer("reason", t), zap.Int("priority", priority))
		} else {
			l.Debug("queued", zap.String("key", key), zap.Stringer("reason", t))
		}
	}
	r.q.AddWithTrigger(key, t, workqueue.AddOptions{Priority: priority})
}

// relistOnGain asks every source that can list to queue its keys again each
// time gained reports new keys, until ctx ends.
func (r *runner) relistOnGain(ctx context.Context, gained <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-gained:
		}
		for _, s := range r.c.sources {
			l, ok := s.(relister)
			if !ok {
				continue
			}
			if err := l.relist(ctx, r); err != nil && ctx.Err() == nil {
				r.c.log.Error("listing again after gaining keys", zap.Error(err))
			}
		}
	}
}

// next takes one key from the queue and reconciles it. It returns false once
// the queue is shut down and empty.
func (r *runner) next(ctx context.Context) bool {
	info := &reconcileInfo{}
	turn, shutdown := r.q.GetTurn(info.buf[:0])
	if shutdown {
		return false
	}
	key := turn.Key
	info.triggers, info.dropped = turn.Triggers, turn.Dropped
	if !r.stopping.Load() {
		id := r.health.begin(key)
		r.reconcile(ctx, key, info)
		r.health.end(id)
	}
	r.q.Done(key)
	return true
}

// reconcile runs the reconciler on key, queued for info's triggers, and
// acts on its verdict.
func (r *runner) reconcile(ctx context.Context, key string, info *reconcileInfo) {
	c := r.c
	if r.gate != nil {
		var done func()
		var ok bool
		if ctx, done, ok = r.gate.Admit(ctx, key); !ok {
			r.q.Forget(key)
			if l := c.debug(); l != nil {
				l.Debug("dropped: key not owned by this replica", zap.String("key", key))
			}
			return
		}
		defer done()
	}
	id := c.idPrefix + strconv.FormatUint(c.idCounter.Add(1), 10)
	info.id = id
	ctx = withReconcile(ctx, info)
	var span trace.Span // nil when tracing is off
	if c.tracer != nil {
		ctx, span = c.tracer.Start(ctx, SpanReconcile, trace.WithAttributes(
			attrController.String(c.name), attrKey.String(key), attrReconcileID.String(id)))
		if len(info.triggers) > 0 || info.dropped > 0 {
			span.SetAttributes(attrReconcileTriggers.StringSlice(TriggerStrings(info.triggers, info.dropped)))
		}
	}
	log := c.log
	if log.Core().Enabled(zapcore.ErrorLevel) {
		// The reconcile's fields are built only for a logger that writes.
		if span != nil && span.SpanContext().IsValid() {
			sc := span.SpanContext()
			log = log.With(zap.String("key", key), zap.String("reconcileID", id),
				zap.Stringer("traceID", sc.TraceID()), zap.Stringer("spanID", sc.SpanID()))
		} else {
			log = log.With(zap.String("key", key), zap.String("reconcileID", id))
		}
		ctx = context.WithValue(ctx, loggerKey{}, log)
		if c.debug() != nil {
			log.Debug("reconciling", zap.Strings("triggers", TriggerStrings(info.triggers, info.dropped)))
		}
	}
	if c.metrics != nil {
		c.metrics.active.Inc()
	}
	start := time.Now()
	res, panicked, timedOut, err := c.call(ctx, key)
	elapsed := time.Since(start)
	if c.metrics != nil {
		c.metrics.active.Dec()
	}

	var o outcome
	var retry *retryAfterError
	switch {
	case err == nil && res.RequeueAfter > 0:
		o = outcomeRequeueAfter
		r.q.Forget(key)
		t := res.Trigger
		if t == (Trigger{}) {
			t.Kind = TriggerRequeue
		}
		r.q.AddWithTrigger(key, t, workqueue.AddOptions{After: res.RequeueAfter})
		if c.debug() != nil {
			log.Debug("reconciled; queued again", zap.Duration("after", res.RequeueAfter), zap.Stringer("trigger", t), zap.Duration("took", elapsed))
		}
	case err == nil:
		o = outcomeSuccess
		r.q.Forget(key)
		if c.debug() != nil {
			log.Debug("reconciled", zap.Duration("took", elapsed))
		}
	case !panicked && errors.Is(err, ErrTerminal):
		o = outcomeTerminal
		r.q.Forget(key)
		log.Error("reconcile failed; not retrying", zap.Error(err))
	case !panicked && errors.As(err, &retry):
		o = outcomeError
		r.q.Forget(key)
		r.q.AddWithTrigger(key, Trigger{Kind: TriggerRetry}, workqueue.AddOptions{After: retry.after})
		log.Error("reconcile failed", zap.Error(err), zap.Duration("retryAfter", retry.after))
	default:
		o = outcomeError
		if panicked {
			o = outcomePanic
		}
		r.q.AddWithTrigger(key, Trigger{Kind: TriggerRetry}, workqueue.AddOptions{RateLimited: true})
		switch {
		case ctx.Err() != nil && !timedOut:
			log.Debug("reconcile interrupted", zap.Error(err))
		case res.RequeueAfter > 0:
			log.Error("reconcile failed; RequeueAfter ignored", zap.Error(err))
		default:
			log.Error("reconcile failed", zap.Error(err))
		}
	}
	c.metrics.record(o, elapsed, timedOut)
	if span != nil {
		endReconcileSpan(span, o, err)
	}
	if r.onReconciled != nil {
		r.onReconciled(Reconciled{Key: key, ReconcileID: id, Triggers: info.triggers, Dropped: info.dropped,
			Start: start, Duration: elapsed, Result: o.String(), Err: err})
	}
}

// call runs the reconciler with the per-reconcile timeout and recovers a panic
// into an error.
func (c *Controller) call(ctx context.Context, key string) (res Result, panicked, timedOut bool, err error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout, errTimeout)
		defer cancel()
		defer func() { timedOut = context.Cause(ctx) == errTimeout }()
	}
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			err = &panicError{value: p, stack: debug.Stack()}
		}
	}()
	res, err = c.rec.Reconcile(ctx, key)
	return res, false, false, err
}

// panicError is a recovered panic; its message holds the stack.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("reconciler panicked: %v\n%s", e.value, e.stack)
}
