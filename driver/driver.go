package driver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver/internal/cacheread"
	"github.com/tendhq/tend/driver/internal/echoes"
	"github.com/tendhq/tend/driver/internal/guarded"
	"github.com/tendhq/tend/driver/internal/journal"
	"github.com/tendhq/tend/driver/internal/phasemetrics"
	"github.com/tendhq/tend/driver/internal/spans"
	"github.com/tendhq/tend/driver/internal/waits"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New] when the
// collection, the machine or the configuration does not make a driver.
var ErrInvalidConfig = errors.New("driver: invalid config")

// Defaults of [Config].
const (
	// DefaultFinalizer is the finalizer a [Driver] puts on the documents of a
	// machine with a final pair when Config.Finalizer is empty.
	DefaultFinalizer = "tend.dev/machine"
	// DefaultWaitInterval is the longest a driver waits before it
	// observes the conditions of an operation again, or runs a step that
	// reported [statemachine.Pending], when Config.WaitInterval is zero.
	// Waits start short: 100 ms after the wait began, then as long as it
	// has lasted (200 ms, 400 ms, …), up to this cap, so a condition that
	// holds soon after its step is seen soon.
	DefaultWaitInterval = 5 * time.Second
	// DefaultProgressInterval is how soon a driver runs a step again after it
	// reported [statemachine.Progressed] when Config.ProgressInterval
	// is zero.
	DefaultProgressInterval = 100 * time.Millisecond
	// DefaultConflictRetries is how many times a reconcile reads a document
	// again after a write conflicted when Config.ConflictRetries is
	// zero.
	DefaultConflictRetries = 5
)

// maxPasses bounds the decisions one reconcile acts on. Every machine settles
// with its intent held constant, so the bound is only reached by a machine
// with very many steps; the reconcile then asks to be queued again.
const maxPasses = 100

// HasIntent is the constraint on a document's Spec type: it carries the
// user's intent, a State of the document's machine. Intent must have a value
// receiver.
type HasIntent[S comparable] interface {
	Intent() S
}

// HasMachineStatus is implemented by a pointer to a document's Status
// type: it holds the machine's part of the status, which the [Driver] reads
// and writes. A Status that embeds statemachine.Status[S, P] implements it
// through the promoted [statemachine.Status.MachineStatus] method:
//
//	type GatewayStatus struct {
//		statemachine.Status[State, Phase]
//		Endpoint string `json:"endpoint,omitempty"`
//	}
type HasMachineStatus[S, P comparable] interface {
	MachineStatus() *statemachine.Status[S, P]
}

// machineStatusOf returns the machine's part of st, which [New]
// checked is there.
func machineStatusOf[S, P comparable, Status any](st *Status) *statemachine.Status[S, P] {
	return any(st).(HasMachineStatus[S, P]).MachineStatus()
}

// HasRequests is implemented by a Spec that carries one-shot requests (see
// statemachine.RequestRule): for each request of the machine, the tokens the
// spec carries, oldest first. A token must never be reused: a restart asked
// for at some time, a rotation asked for by id. The driver records the
// tokens in status and serves each once.
type HasRequests interface {
	Requests() map[string][]string
}

// StepFunc is the action of one named step of a machine's operation. It is
// called with the document as last read, and opID, the id of the operation in
// flight: the same on every retry and persisted before the step first ran
// (the operation of a transitional initial phase takes the document's UID,
// stored with it),
// so a non-idempotent action (an upload under {key}/{opID}/…) can key on it.
//
// A step must be idempotent: after a crash or a lost status write it runs
// again. It returns the outcome of this run: [statemachine.Done] when the
// step has no work left, [statemachine.Progressed] when it did part of its
// work and must run again (delete a batch of children, return, run again),
// [statemachine.Pending] when work it started elsewhere has not ended (it runs
// again after WaitInterval to look; its failure count stays),
// [statemachine.Failed] with the error for a transient failure (retried with
// backoff), [statemachine.FailedTerminal] for a failure an operator must look
// at. An error that matches [ErrTerminal] (see [Terminal]) is terminal
// whatever the outcome; any other non-nil error means Failed unless the
// outcome is FailedTerminal.
//
// A step that panics has failed: the driver recovers the panic, records it
// as a failed attempt and logs its stack.
//
// A step may record what it made in obj.Status (outside the machine's part):
// the driver writes obj.Status with the step's outcome, in the same write,
// whenever the outcome changes the machine's status (Done always does).
type StepFunc[Spec, Status any] func(ctx context.Context, obj *store.Object[Spec, Status], opID string) (statemachine.Outcome, error)

// Observer observes one condition of a document: a fact of the world the
// document describes (deployment_available, volume_ready…), read from that
// world, never from the document's own status. reason is a short
// explanation recorded with the condition. An error leaves the condition
// unobserved; the reconcile fails with it and is retried after
// Config.WaitInterval, as waiting would have observed again.
type ObserverFunc[Spec, Status any] func(ctx context.Context, obj *store.Object[Spec, Status]) (status bool, reason string, err error)

// Config configures a [Driver].
type Config[Spec, Status any] struct {
	// Steps maps the name of every step of the machine (see
	// statemachine.Machine.Steps) to its action. Required: [New]
	// fails naming each step without an action and each action that is no
	// step of the machine.
	Steps map[string]StepFunc[Spec, Status]

	// Observers maps the name of every condition the machine's completions
	// require (see statemachine.Machine.Conditions) to its observer, checked
	// as Steps are. Observers run only when an operation has done its steps
	// and the machine judges its completion, and only for the conditions
	// that completion requires.
	Observers map[string]ObserverFunc[Spec, Status]

	// Finalizer is the finalizer the driver puts on every document of a
	// machine that has a final pair, so that a deleted document is driven to
	// that pair before it is removed. Empty means [DefaultFinalizer]. It must
	// pass store.ValidateFinalizer.
	Finalizer string

	// NewOperationID returns the id of a new operation. Nil means a random
	// 26-character id (crypto/rand.Text). The operation of a transitional
	// initial phase, begun on a status the driver never wrote, takes the
	// document's UID instead: it is stored already, so beginning it needs no
	// write.
	NewOperationID func() string

	// WaitInterval is the longest the driver waits before it observes again
	// the conditions of an operation whose completion does not hold yet, or
	// runs again a step that reported [statemachine.Pending]: waits start at
	// 100 ms and double up to it. Zero means [DefaultWaitInterval].
	WaitInterval time.Duration

	// ProgressInterval is how soon a step that reported
	// [statemachine.Progressed] runs again. Zero means
	// [DefaultProgressInterval].
	ProgressInterval time.Duration

	// ConflictRetries is how many times one reconcile reads the document
	// again after a write conflicted with another writer (a user changing the
	// intent, typically) before it gives up and returns the conflict, to be
	// retried with backoff. Zero means [DefaultConflictRetries].
	ConflictRetries int

	// Backoff is the schedule of a failing step: after its operation's n-th
	// consecutive failure the step runs again no sooner than Delay(n). The
	// count and the retry time are kept in the document's status
	// (statemachine.Operation.Attempts and RetryAt), so a restart, a
	// failover, a resync or any event that does not change the spec keeps
	// the schedule; a spec change or a deletion request retries at once.
	// An error that carries its own delay ([controller.RetryAfter]) or
	// whose machine's error class declares a schedule
	// (statemachine.ErrorClass) is retried on that instead.
	// Nil means [workqueue.DefaultBackoff]: 5 ms, doubling, up to 1000 s.
	Backoff workqueue.Backoff

	// Timers maps each timer whose due time is computed from the document
	// (statemachine.Timer without After; see Machine.ComputedTimers) to the
	// function that computes it: the certificate's expiry less 30 days, say.
	// A zero time means not due. Required for each such timer, checked as
	// Steps are.
	Timers map[string]func(obj *store.Object[Spec, Status]) time.Time

	// MetricsRegisterer receives the phase metrics of the driver's kind
	// (tend_phase_transitions_total and tend_phase_duration_seconds, with a
	// kind label). Nil means no metrics.
	MetricsRegisterer prometheus.Registerer

	// TracerProvider receives a span for each call of a step ([SpanStep])
	// and of an observer ([SpanObserve]), children of the span in the
	// reconcile's context (the controller's [SpanReconcile] when its
	// [Config.TracerProvider] is set too); a step's span is the parent of the
	// spans the step starts from its context. Nil means no spans, and none of
	// their cost.
	TracerProvider trace.TracerProvider

	// History receives the history of each document the driver reconciles
	// (transitions, step calls, refusals, operations given up, drift
	// repairs, requests, timers, operator commands carried out or refused),
	// each entry with the reconcile's id and
	// trace: see package history. Recording never blocks a reconcile. Nil
	// means no history.
	History *history.Recorder

	// Cache is the informer cache over the collection's store to read the
	// documents from, and to watch them through (the driver's [Driver.Source]):
	// usually the cache of the Manager that runs the driver (package manager,
	// Manager.Cache), which runs it. The driver reads a document from the
	// cache once the cache shows the last write the driver made to it (a
	// read-your-writes gate, expectations.Gate), so a reconcile never acts
	// on a view older than its own writes; a read after a write conflict
	// goes to the store, and so does a read that waited WaitInterval for
	// the cache in vain (it fails, to be retried); and before a step runs on
	// a document read from the cache, the driver checks that the store still
	// holds that revision. The cache must run while the driver reconciles.
	// Nil means every read goes to the store, and the driver's source runs
	// an informer of its own.
	Cache *informer.Factory

	// twice names what [Config.Bind] was given twice, for New to report.
	twice []string
}

// Driver is the [Reconciler] of documents governed by a
// statemachine.Machine: for each key, it drives the document's Phase towards
// the intent its Spec holds, one decision of the machine at a time.
// Build one with [New], and give it and its [Driver.Source] to a
// [Controller].
//
// # A reconcile
//
//  1. Read the newest document. A document that is gone is done.
//  2. Finalizer gate (machines with a final pair only): a document that is
//     not Terminating gets the driver's finalizer first. A Terminating
//     document is driven towards the machine's final state instead of the
//     intent in its Spec.
//  3. Decide: the machine decides from the intent and the machine's status.
//     Before it judges an operation's completion, the observers of the
//     conditions that completion requires are run and their observations
//     recorded.
//  4. Execute: Begin generates an operation id (the operation of a
//     transitional initial phase takes the document's UID); Run calls the
//     step's action with the operation's id.
//  5. Apply the result to the status — phase, conditions, checkpoint,
//     operation id and whatever the step recorded — and write it when a
//     crash would need it: before the next step runs, if the step before it
//     or its operation's id is not stored, and when the reconcile ends. Each
//     write is ONE store write conditional on the revision read; a conflict
//     reads the document again and decides again
//     ([Config.ConflictRetries]).
//
// The reconcile goes on deciding after each decision that made progress
// (begin, a step done, a completion), so a document whose steps are quick
// converges in one reconcile, and a completion and the next begin ride on
// the checkpoint of the step before them (the package documentation lists
// the writes). It ends with a result: done when the pair is settled (or held in the
// Fault phase for an operator), queued again after
// [Config.WaitInterval] while a completion does not hold, after
// [Config.ProgressInterval] when a step progressed, an error (retried
// with backoff) when a step failed, and a [Terminal] error when it failed
// terminally (the status is then in the machine's Fault phase).
//
// # Crashes
//
// Every decision is re-derived from the stored status, so a driver that
// stops at any point resumes at the first step not recorded done: a step
// whose Done was lost runs again (steps are idempotent), a step never runs
// before its operation's id is stored and the step before it is
// checkpointed, and no recorded step runs again.
//
// # Failures, bounds and backoff
//
// A step that fails is retried on the schedule of [Config.Backoff],
// counted from the failures recorded in the operation's status, so the
// schedule holds across restarts, failovers and events: the driver's own
// writes never trigger a reconcile of their document (its [Driver.Source]
// recognises them by the revision the driver wrote), and a reconcile
// queued early for any other reason finds the retry time in status and
// waits for it. A spec change or a deletion request retries at once.
//
// The machine's error classes (statemachine.ErrorClass) refine this: an
// error of a final class gives the operation up at once, as a terminal one
// does; an error that carries its own delay ([controller.RetryAfter],
// [controller.RetryAfterHTTP]) waits that delay; an error of a class with a
// schedule follows it; any other follows the backoff. The class is kept in
// status (statemachine.Operation.ErrorClass), in the history of each
// failed call, and labels tend_step_errors_total.
//
// Every operation is bounded by its phase's statemachine.Bounds: each step
// call by a timeout (its context is cancelled), the phase by a deadline and
// each step by an optional attempt cap. Past them the document moves to the
// phase's FailTo phase (the machine's Fault phase by default) with the
// reason in Status.Failure, logged once and counted. A rule out of the Fault
// phase that begins the failed phase again resumes the same operation, its
// failure count and backoff kept, so a lap through Fault never starts the
// schedule over.
//
// # Refusals
//
// An intent the machine declares refused in the current phase is not acted
// on: Status.Refused shows it with the machine's reason, it is logged once
// and counted, and the driver keeps serving the intent it adopted last.
// [Driver.UpdateSpec] refuses to write such an intent in the first place.
//
// # Deletion and the final pair
//
// A machine's final pair (a statemachine.Settle with Final set) is the end of
// a document's life. When a document settles in it, the driver removes the
// document: it deletes it and removes its finalizer. Deleting a document
// through the store (it becomes Terminating) is the same as setting its intent
// to the final pair's state: the driver drives it there, runs every cleanup
// step the machine declares, and then removes its finalizer. A document whose
// pair is held (a terminal failure) stays Terminating, its failure in its
// status, until an operator intervenes. A machine without a final pair gets
// no finalizer: deleting its documents removes them at once.
//
// # Operators
//
// A document an operator paused (Status.Paused) is not acted on until it
// is resumed; the commands an operator writes (Status.Commands) are
// carried out at the start of a pass, before the machine decides, each
// removed in the write that carries it out. The package documentation
// says how.
//
// # Intent
//
// Users change intent with [Driver.UpdateSpec], which refuses an intent the
// machine cannot reach from the phase read in the same revision. An intent
// written otherwise and refused by the machine is logged and ignored: the
// driver keeps serving the intent it adopted last.
//
// A Driver is safe for concurrent use; a [Controller] never reconciles one
// key twice at once.
type Driver[Spec, Status any] struct {
	impl  driverImpl[Spec, Status]
	coll  *store.Collection[Spec, Status]
	watch informer.ListWatcher // what Source watches: Config.Cache, or the store
}

// driverImpl is the part of a Driver that depends on the machine's types.
type driverImpl[Spec, Status any] interface {
	reconcile(ctx context.Context, key string) (controller.Result, error)
	create(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], error)
	ownWrites() *echoes.Tracker
	updateSpec(ctx context.Context, key string, set func(*Spec)) (*store.Object[Spec, Status], error)
	cascade(ctx context.Context, opts store.ListOptions, set func(*Spec), untilGone bool) (statemachine.Outcome, error)
	registration() registry.Entry
	checkCarried(ctx context.Context) error
	settled(obj *store.Object[Spec, Status], generation int64) (bool, error)
}

// New returns a driver of the documents of collection c governed by
// machine m. It checks that every step of m has an action and every
// condition an observer, and validates cfg; errors match
// [ErrInvalidConfig]. With a MetricsRegisterer it registers the phase
// metrics of the collection's kind.
//
// Spec and Status are the document's types; Spec reports the intent
// ([HasIntent]) and a pointer to Status must hold the machine's status
// ([HasMachineStatus]), which New checks. All type arguments are
// inferred from c and m.
func New[Spec HasIntent[S], Status any, S, P comparable](c *store.Collection[Spec, Status], m *statemachine.Machine[S, P], cfg Config[Spec, Status]) (*Driver[Spec, Status], error) {
	if c == nil || m == nil {
		return nil, fmt.Errorf("%w: New needs a collection and a machine", ErrInvalidConfig)
	}
	var problems []string
	if _, ok := any(new(Status)).(HasMachineStatus[S, P]); !ok {
		var st Status
		problems = append(problems, fmt.Sprintf("*%T has no method MachineStatus() *statemachine.Status[%T, %T]: embed statemachine.Status[%[2]T, %[3]T] in it", st, *new(S), *new(P)))
	}
	for _, t := range cfg.twice {
		problems = append(problems, t+" is given twice")
	}
	problems = append(problems, mismatched(m.Steps(), slices.Collect(maps.Keys(cfg.Steps)),
		func(name string) bool { return cfg.Steps[name] != nil }, "step %q has no action", "action %q is not a step of the machine")...)
	problems = append(problems, mismatched(m.Conditions(), slices.Collect(maps.Keys(cfg.Observers)),
		func(name string) bool { return cfg.Observers[name] != nil }, "condition %q has no observer", "observer %q observes no condition of the machine")...)
	problems = append(problems, mismatched(m.ComputedTimers(), slices.Collect(maps.Keys(cfg.Timers)),
		func(name string) bool { return cfg.Timers[name] != nil }, "timer %q has no due-time function", "due-time function %q is no computed timer of the machine")...)
	switch {
	case cfg.WaitInterval < 0:
		problems = append(problems, fmt.Sprintf("WaitInterval %v is negative", cfg.WaitInterval))
	case cfg.ProgressInterval < 0:
		problems = append(problems, fmt.Sprintf("ProgressInterval %v is negative", cfg.ProgressInterval))
	case cfg.ConflictRetries < 0:
		problems = append(problems, fmt.Sprintf("ConflictRetries %d is negative", cfg.ConflictRetries))
	}
	fin := cmp.Or(cfg.Finalizer, DefaultFinalizer)
	if err := store.ValidateFinalizer(fin); err != nil {
		problems = append(problems, err.Error())
	}
	var final *S
	for _, s := range m.Definition().Settled {
		switch {
		case !s.Final:
		case final == nil:
			final = &s.State
		case *final != s.State:
			problems = append(problems, fmt.Sprintf("final pairs name two states, %v and %v", *final, s.State))
		}
	}
	if problems != nil {
		return nil, fmt.Errorf("%w: driver of %s with machine %s: %s", ErrInvalidConfig, c.Kind(), m.Name(), strings.Join(problems, "; "))
	}
	d := &phaseDriver[Spec, Status, S, P]{
		c:         c,
		m:         m,
		steps:     maps.Clone(cfg.Steps),
		observers: maps.Clone(cfg.Observers),
		timers:    maps.Clone(cfg.Timers),
		phases:    map[P]statemachine.PhaseSpec[P]{},
		requests:  m.Requests(),
		computed:  m.ComputedTimers(),
		finalizer: fin,
		final:     final,
		newID:     cfg.NewOperationID,
		wait:      cmp.Or(cfg.WaitInterval, DefaultWaitInterval),
		progress:  cmp.Or(cfg.ProgressInterval, DefaultProgressInterval),
		conflicts: cmp.Or(cfg.ConflictRetries, DefaultConflictRetries),
		backoff:   cfg.Backoff,
		tracing:   spans.New(cfg.TracerProvider, c.Kind(), m),
		history:   journal.New(cfg.History, c.Kind()),
	}
	if d.backoff == nil {
		d.backoff = workqueue.DefaultBackoff()
	}
	if d.newID == nil {
		d.newID = rand.Text
	}
	for _, p := range m.Phases() {
		d.phases[p], _ = m.Spec(p)
	}
	d.reader = cacheread.New(c, cfg.Cache, d.wait)
	d.echoes.Gate = d.reader.Gate()
	if cfg.MetricsRegisterer != nil {
		pm, err := phasemetrics.New(cfg.MetricsRegisterer, c.Kind(), m)
		if err != nil {
			return nil, err
		}
		d.metrics = pm
	}
	var lw informer.ListWatcher = c.Backend()
	if cfg.Cache != nil {
		lw = cfg.Cache
	}
	return &Driver[Spec, Status]{impl: d, coll: c, watch: lw}, nil
}

// mismatched pairs the names a machine declares with the names a config
// gives, and describes, in order, each declared name with nothing present
// for it (missing) and each given name the machine does not declare (extra).
func mismatched(declared, given []string, present func(string) bool, missing, extra string) []string {
	var out []string
	for _, name := range declared {
		if !present(name) {
			out = append(out, fmt.Sprintf(missing, name))
		}
	}
	slices.Sort(given)
	for _, name := range given {
		if !slices.Contains(declared, name) {
			out = append(out, fmt.Sprintf(extra, name))
		}
	}
	return out
}

// Reconcile implements [Reconciler]: it drives the document under key, as the
// type's documentation describes.
func (d *Driver[Spec, Status]) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	return d.impl.reconcile(ctx, key)
}

// Source returns the source that queues the key of every document of the
// driver's kind, added, changed or deleted: controller.For over
// [Config.Cache] (the cache the driver reads) or, without one, over the
// collection's backend, less the
// driver's own writes. A change this driver wrote (its
// status writes, its finalizer) does not queue the document again: the
// driver already decided what comes next, and asked for it. A write by
// anyone else (a user, an operator, another replica) queues it as usual, and
// so does every document of a list: the one a controller makes when it
// starts, or takes the lead back, with a queue that holds nothing yet.
// Add [Owns] for the kinds whose documents the driver's steps create or
// retire, so a change to one of them queues its owner.
//
// Each key it queues says why (controller.TriggersFrom): listed, spec with
// the new generation, delete, or command for another writer's write of the
// status (an operator's pause, resume or command). The driver's requeues
// say theirs: timer (a wait, a timer), retry (a step's backoff), drift (a
// settled document's health check). The events of a document the driver
// removed (the last 1,024) queue nothing, even after it forgot the key.
func (d *Driver[Spec, Status]) Source() controller.Source {
	own := d.impl.ownWrites()
	return controller.Events(d.watch, d.coll.Kind(), func(e controller.Enqueuer, ev controller.Event) {
		key, listed, t := ev.Doc.Meta.Key, ev.Listed, sourceTrigger(&ev)
		// A listed document is always queued: a list starts (or restarts)
		// a controller whose queue holds nothing, not even the requeue its
		// last reconcile asked for.
		if listed || !own.WasRemoved(ev.Doc.Meta.UID) && !own.Known(key, ev.Doc.Meta.Revision, func() { e.EnqueueTrigger(key, t, 0) }) {
			e.EnqueueTrigger(key, t, 0)
		}
	})
}

// Create admits and stores a new document: its intent must be a state of
// the machine that the initial phase does not refuse (an error matching
// statemachine.ErrUnknownState names the states; one matching
// statemachine.ErrIntentRefused names the reason). Its status is the
// machine's: the store never writes a status on create, whatever obj.Status
// holds, and the returned document shows the initial phase the driver reads
// an unwritten status as. Create does not modify obj. Documents created with the
// collection's own Create skip this admission; the driver then records an
// unknown intent in Status.Refused instead of acting on it.
func (d *Driver[Spec, Status]) Create(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], error) {
	return d.impl.create(ctx, obj)
}

// Collection returns the collection the driver reads and writes.
func (d *Driver[Spec, Status]) Collection() *store.Collection[Spec, Status] { return d.coll }

// phaseDriver is a Driver's implementation, with the machine's types.
type phaseDriver[Spec HasIntent[S], Status any, S, P comparable] struct {
	c         *store.Collection[Spec, Status]
	m         *statemachine.Machine[S, P]
	steps     map[string]StepFunc[Spec, Status]
	observers map[string]ObserverFunc[Spec, Status]
	timers    map[string]func(obj *store.Object[Spec, Status]) time.Time
	phases    map[P]statemachine.PhaseSpec[P] // each phase's declaration, bounds resolved
	requests  []string                        // the machine's requests
	computed  []string                        // the machine's timers computed from the document
	finalizer string
	final     *S // the state of the final pairs; nil when the machine has none
	newID     func() string
	wait      time.Duration // the longest wait (see waits)
	waits     waits.Schedule
	progress  time.Duration
	conflicts int
	backoff   workqueue.Backoff
	metrics   *phasemetrics.Metrics[S, P]     // nil when metrics are off
	tracing   *spans.Tracing[S, P]            // nil when tracing is off
	history   *journal.Journal                // nil when history is off
	reader    *cacheread.Reader[Spec, Status] // reads the documents: from the cache, when the driver reads one
	moveBufs  sync.Pool                       // *[]move[S, P]: the moves of reconciles ended, for the next ones

	echoes echoes.Tracker // the driver's own writes, which its source does not queue
}

// gone forgets the document under key once it is removed.
func (d *phaseDriver[Spec, Status, S, P]) gone(key string) {
	d.echoes.Forget(key)
	d.metrics.Forget(key)
}

func (d *phaseDriver[Spec, Status, S, P]) create(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], error) {
	intent := obj.Spec.Intent()
	if err := d.m.ValidateIntent(intent); err != nil {
		return nil, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)
	}
	if err := d.m.Admit(intent, d.m.Initial()); err != nil {
		return nil, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)
	}
	created, err := d.c.Create(ctx, obj)
	if err != nil {
		return nil, err
	}
	*machineStatusOf[S, P](&created.Status) = d.machineStatus(created)
	return created, nil
}

// machineStatus returns the machine's part of obj's status, read as the
// driver sees it: a status never written is the machine's new status.
func (d *phaseDriver[Spec, Status, S, P]) machineStatus(obj *store.Object[Spec, Status]) statemachine.Status[S, P] {
	return storedStatus(d.m, obj)
}

// intent returns the intent the driver serves for obj: the Spec's (or
// the state that replaces it, when the machine retired it), or the final
// state while obj is Terminating.
func (d *phaseDriver[Spec, Status, S, P]) intent(obj *store.Object[Spec, Status]) S {
	if d.final != nil && obj.Terminating() {
		return *d.final
	}
	return d.m.CarryIntent(obj.Spec.Intent())
}

// turn is what the reconcile does after a pass over one decision.
type turn int

const (
	turnDecide   turn = iota // decide again on the object as it now is
	turnRedecide             // a step's outcome alone was written: decide again on it
	turnReread               // a write conflicted: read the object again
	turnEnd                  // the reconcile ends with the result and error given
)

func (d *phaseDriver[Spec, Status, S, P]) reconcile(ctx context.Context, key string) (controller.Result, error) {
	log := controller.LoggerFrom(ctx)
	if log.Core().Enabled(zapcore.ErrorLevel) {
		log = log.With(zap.String("kind", d.c.Kind()))
	}
	var (
		obj *store.Object[Spec, Status]
		w   unwritten[Status, S, P]
	)
	// The moves a reconcile decides are reported once written; the list
	// that holds them meanwhile is reused from reconcile to reconcile.
	moves, _ := d.moveBufs.Get().(*[]move[S, P])
	if moves == nil {
		moves = new([]move[S, P])
	}
	defer func() {
		*moves = w.moves[:0]
		clear((*moves)[:cap(*moves)])
		d.moveBufs.Put(moves)
	}()
	w.moves = *moves
	conflicts := 0
	for range maxPasses {
		if obj == nil {
			var (
				err    error
				cached bool
			)
			// The first read may come from the cache; one after a conflict
			// goes to the store, which the cache may not have caught up with.
			if obj, cached, err = d.reader.Read(ctx, key, conflicts > 0); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					d.gone(key)
					return controller.Result{}, nil
				}
				return controller.Result{}, err
			}
			w = unwritten[Status, S, P]{stored: d.machineStatus(obj), status: obj.Status,
				cached: cached, moves: w.moves[:0]}
			switch t, err := d.migrate(ctx, log, obj, &w); t {
			case turnEnd:
				return controller.Result{}, err
			case turnReread:
				if conflicts++; conflicts > d.conflicts {
					return controller.Result{}, err
				}
				obj = nil
				continue
			}
		}
		pctx, plog, sc := d.redacting(ctx, log, obj)
		next, p, res, err := d.pass(pctx, plog, obj, &w)
		err = sc.Error(err)
		switch p {
		case turnEnd:
			return res, err
		case turnReread:
			if conflicts++; conflicts > d.conflicts {
				return controller.Result{}, err
			}
			obj = nil
		default:
			obj = next
		}
	}
	if _, p, err := d.flush(ctx, log, obj, &w); p == turnReread || p == turnEnd {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: d.progress}, nil
}

// unwritten is what a reconcile decided and has not written yet. The driver
// writes a status when a crash would need what it holds, and not before:
// before a step runs, when a step's checkpoint or its operation's id is not
// stored yet, and when the reconcile ends. So the moves that follow a step
// done within one reconcile — its operation's completion, on the
// observations it was judged from, and the next operation's begin with its
// id — ride on that step's checkpoint write.
type unwritten[Status any, S, P comparable] struct {
	stored  statemachine.Status[S, P] // the machine's status as stored: last read or written
	status  Status                    // the whole status as stored
	encoded []byte                    // status, encoded; nil until needed or written

	// step is set while the outcome of a step is not stored; atStep is the
	// status the step left, before is the stored status it started from
	// (encoded), for recordOver.
	step     bool
	atStep   Status
	before   []byte
	beforeSt statemachine.Status[S, P]

	moves  []move[S, P] // the changes decided since the last write, reported once written
	atMove int          // how many of moves the step's outcome ends

	// cached is set while the document was read from the cache and no
	// write has confirmed it since: a step does not run on it before the
	// store does (see cacheread.Reader.Confirm).
	cached bool
}

// move is one decision's change of the machine's status, reported (logged,
// counted, traced) once it is stored.
type move[S, P comparable] struct {
	intent     S
	read, next statemachine.Status[S, P]
	now        time.Time
	commands   []statemachine.CommandOutcome // the operator commands it carried out or refused
}

// firstOperation reports whether the stored status was never written by
// the driver: every status it writes records a generation, and generations
// start at 1. Such a document is in the machine's initial phase; when that
// phase is transitional, its operation is begun again after any crash
// before the first write, whatever the intent, so it takes the document's
// UID as its id, stored since the document was created, and beginning it
// needs no write of its own.
func (w *unwritten[Status, S, P]) firstOperation() bool { return w.stored.ObservedGeneration == 0 }

// durable reports whether a step of the operation id may run on what is
// stored: no earlier step's checkpoint is unwritten, and a crash now would
// resume the same operation, because it is stored, or it is the initial
// phase's operation of a document whose status was never written, whose id
// is the document's UID. An operation a rule begins (or resumes from a
// failure) is not: after a crash, a changed intent may begin another.
func (w *unwritten[Status, S, P]) durable(id, uid string) bool {
	switch {
	case w.step:
		return false
	case w.stored.Operation != nil && w.stored.Operation.ID == id:
		return true
	}
	return w.firstOperation() && id == uid && uid != ""
}

// flush writes obj's status if its machine part differs from the stored
// one, and reports the moves it stores. It returns obj as written with
// turnDecide, or turnReread after a conflict, or turnEnd with the error
// (none when the document is gone). A write that conflicts while it holds
// a step's outcome records that outcome alone onto the document as it now
// is (see recordOver) and returns turnRedecide: what was decided after the
// step is dropped, to be decided again on what is stored.
func (d *phaseDriver[Spec, Status, S, P]) flush(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P]) (_ *store.Object[Spec, Status], _ turn, err error) {
	if !w.step && d.machineStatus(obj).Equal(w.stored) {
		w.moves = w.moves[:0]
		return obj, turnDecide, nil
	}
	p := turnDecide
	moves := w.moves
	written, encoded, err := d.writeEncoded(ctx, obj)
	if w.step && errors.Is(err, store.ErrConflict) {
		at := *obj
		at.Status = w.atStep
		moves, p, encoded = moves[:w.atMove], turnRedecide, nil
		written, err = d.recordOver(ctx, &at, w.before, w.beforeSt)
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil, turnReread, err
	case errors.Is(err, store.ErrNotFound):
		d.gone(obj.Key)
		return nil, turnEnd, nil
	case err != nil:
		return nil, turnEnd, err
	}
	for _, m := range moves {
		d.report(ctx, log, written.Key, m.intent, m.read, m.next, m.now)
		d.recordStatus(ctx, written, m.intent, m.read, m.next, m.now)
		d.served(ctx, log, written, m.read, m.next, m.now)
		d.commanded(ctx, log, written, m.commands, m.now)
	}
	*w = unwritten[Status, S, P]{stored: d.machineStatus(written), status: written.Status, encoded: encoded, moves: w.moves[:0]}
	return written, p, nil
}

// pass acts on one decision for obj. It returns the object as written (for
// turnDecide), or what the reconcile ends with: it holds for an operator or
// the finalizer (held), decides (decide), acts on the decision (act), keeps
// the status it leads to (keep), and says what comes next (then).
func (d *phaseDriver[Spec, Status, S, P]) pass(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P]) (*store.Object[Spec, Status], turn, controller.Result, error) {
	read := d.machineStatus(obj)
	if x := d.held(ctx, log, obj, w, read); x != nil {
		return x.values()
	}
	c, x := d.decide(ctx, log, obj, w, read)
	if x != nil {
		return x.values()
	}
	obj, r, before, x := d.act(ctx, log, obj, w, c)
	if x != nil {
		return x.values()
	}
	next, x := d.keep(ctx, log, obj, w, c, r, before)
	if x != nil {
		return x.values()
	}
	return d.then(ctx, log, obj, w, c, r, next).values()
}

// exit is what a pass ends with: the object as written (for turnDecide and
// turnRedecide), what the reconcile does next, and its result and error.
type exit[Spec, Status any] struct {
	obj  *store.Object[Spec, Status]
	turn turn
	res  controller.Result
	err  error
}

func (x *exit[Spec, Status]) values() (*store.Object[Spec, Status], turn, controller.Result, error) {
	return x.obj, x.turn, x.res, x.err
}

// exitOf makes an exit of what a function of the driver returned.
func exitOf[Spec, Status any](obj *store.Object[Spec, Status], t turn, res controller.Result, err error) *exit[Spec, Status] {
	return &exit[Spec, Status]{obj: obj, turn: t, res: res, err: err}
}

// end ends the reconcile with res and err once what it decided is stored.
func (d *phaseDriver[Spec, Status, S, P]) end(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], res controller.Result, err error) *exit[Spec, Status] {
	if written, t, ferr := d.flush(ctx, log, obj, w); t != turnDecide {
		return exitOf(written, t, controller.Result{}, ferr)
	}
	return exitOf[Spec, Status](nil, turnEnd, res, err)
}

// held returns how the pass ends when no decision is to be made yet: the
// document is paused by an operator, its operators' commands were carried
// out, or its finalizer is to be added (or another controller's deletion
// is to finish). It returns nil when the machine may decide.
func (d *phaseDriver[Spec, Status, S, P]) held(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], read statemachine.Status[S, P]) *exit[Spec, Status] {
	if read.Paused != nil {
		// Held by an operator: no decision, no write, no timer. Whatever
		// this reconcile decided before is stored (the status was read
		// again since), and the operator's next write queues it again.
		d.metrics.Paused(obj.Key, true)
		return exitOf[Spec, Status](nil, turnEnd, controller.Result{}, nil)
	}
	d.metrics.Paused(obj.Key, false)
	if len(read.Commands) > 0 {
		if next, t, err := d.commands(ctx, log, obj, w, read); t != turnDecide || next != nil {
			return exitOf(next, t, controller.Result{}, err)
		}
	}
	if d.final == nil {
		return nil
	}
	switch finalizer.StageOf(guarded.New(d.c, obj, nil), d.finalizer) {
	case finalizer.Absent:
		fo := guarded.New(d.c, obj, &d.echoes)
		if err := finalizer.Add(ctx, fo, d.finalizer); err != nil {
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, finalizer.ErrTerminating) {
				return d.end(ctx, log, obj, w, controller.Result{}, nil)
			}
			return d.end(ctx, log, obj, w, controller.Result{}, err)
		}
		return exitOf(fo.Object(), turnDecide, controller.Result{}, nil)
	case finalizer.Finalized:
		return d.end(ctx, log, obj, w, controller.Result{}, nil) // another controller's deletion to finish
	}
	return nil
}

// choice is what a pass decided, and what it decided on.
type choice[S, P comparable] struct {
	read   statemachine.Status[S, P] // the machine's status as read
	st     statemachine.Status[S, P] // read, with what the machine decides from beside the intent
	intent S
	dec    statemachine.Decision[S, P]
	now    time.Time
}

// decide asks the machine what to do with obj, on fresh observations when
// the decision depends on conditions.
func (d *phaseDriver[Spec, Status, S, P]) decide(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], read statemachine.Status[S, P]) (choice[S, P], *exit[Spec, Status]) {
	c := choice[S, P]{read: read, st: read, now: time.Now()}
	if op := c.st.Operation; op != nil && !op.RetryAt.IsZero() &&
		(obj.Generation != c.st.ObservedGeneration || obj.Terminating() != c.st.ObservedDeletion) {
		// A spec change or a deletion request retries a failed step at once.
		retry := *op
		retry.RetryAt = time.Time{}
		c.st.Operation = &retry
	}
	c.intent = d.intent(obj)
	c.st = d.fold(obj, c.st)
	var err error
	c.dec, err = d.m.Decide(c.intent, c.st, c.now)
	if errors.Is(err, statemachine.ErrUnknownState) {
		return c, exitOf(d.unknownIntent(ctx, log, obj, read, c.intent, err))
	}
	if err != nil {
		return c, d.end(ctx, log, obj, w, controller.Result{}, controller.Terminal(fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)))
	}
	ps := d.phases[c.st.Phase]
	var judge []statemachine.Require
	switch dec := c.dec; {
	case dec.Action == statemachine.Wait || dec.Action == statemachine.Complete || (dec.Action == statemachine.Expire && dec.Step == ""):
		// Judge the completion on fresh observations: one that holds by
		// now wins over a deadline that has passed.
		judge = ps.Completion
	case dec.Action == statemachine.Nothing && !dec.Final || len(dec.Drift) > 0:
		// A settled object: is its phase's health still true?
		judge = ps.Health
	}
	if len(judge) > 0 {
		if c.st, err = d.observe(ctx, obj, c.st, judge, c.now); err != nil {
			// A failed read is retried when a successful one would have
			// been: waiting is made of reads, and the error backoff is for
			// actions. (A condition that needs several reads at once would
			// otherwise see its retries back off while each pass fails.)
			dec := c.dec
			wait := d.waits.Next(obj.Key, waits.Point(dec.Operation.ID, dec.Step, dec.Operation.Attempts), c.now, d.wait)
			return c, d.end(ctx, log, obj, w, controller.Result{}, controller.RetryAfter(err, until(c.now, wait, dec.Deadline)))
		}
		if c.dec, err = d.m.Decide(c.intent, c.st, c.now); err != nil {
			return c, d.end(ctx, log, obj, w, controller.Result{}, controller.Terminal(fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err)))
		}
	}
	d.settledMoves(log, obj.Key, c.dec, c.st)
	d.recordSettled(ctx, obj, c.dec, c.st)
	return c, nil
}

// act carries out the decision c: it names the operation an operation's
// begin needs, removes a document that reached its final pair, and runs a
// step once what a crash would need is stored and the store confirms the
// document the step runs on. It returns the object acted on, the report of
// what happened, and the stored status a step started from (encoded).
func (d *phaseDriver[Spec, Status, S, P]) act(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], c choice[S, P]) (*store.Object[Spec, Status], statemachine.Report, []byte, *exit[Spec, Status]) {
	dec := c.dec
	r := statemachine.Report{Now: c.now}
	switch {
	case !d.m.NeedsOperationID(dec):
	case dec.Action == statemachine.Begin && dec.Next == dec.Phase && w.firstOperation() && obj.UID != "":
		// The operation of the initial phase, begun on a status never
		// written: a crash before the status is written begins it again,
		// whatever the intent, so the UID, stored with the document, is
		// all of it a crash needs.
		r.OperationID = obj.UID
	default:
		r.OperationID = d.newID()
	}
	switch dec.Action {
	case statemachine.Nothing:
		if dec.Final {
			return obj, r, nil, exitOf(d.remove(ctx, obj))
		}
		return obj, r, nil, nil
	case statemachine.Run:
	default:
		return obj, r, nil, nil
	}
	if !w.durable(dec.Operation.ID, obj.UID) {
		// Store the operation's id and the earlier step's checkpoint
		// before the step runs.
		written, t, err := d.flush(ctx, log, obj, w)
		if t != turnDecide {
			return obj, r, nil, exitOf(written, t, controller.Result{}, err)
		}
		obj = written
	}
	if w.cached {
		if err := d.reader.Confirm(ctx, obj); err != nil {
			return obj, r, nil, exitOf[Spec, Status](nil, turnReread, controller.Result{}, err)
		}
		w.cached = false
	}
	if w.encoded == nil {
		stored := *obj
		stored.Status = w.status
		doc, err := d.c.EncodeStatus(&stored)
		if err != nil {
			return obj, r, nil, d.end(ctx, log, obj, w, controller.Result{}, err)
		}
		w.encoded = doc.Status
	}
	var class statemachine.ErrorClass
	r.Outcome, class, r.Err = d.run(ctx, obj, dec)
	r.ErrorClass = class.Name
	if ctx.Err() != nil && r.Outcome != statemachine.Done {
		// Cancelled (shutdown, timeout, lease lost): record nothing.
		return obj, r, nil, exitOf[Spec, Status](nil, turnEnd, controller.Result{}, cmp.Or(r.Err, ctx.Err()))
	}
	r.Now = time.Now()
	r.RetryAfter = d.retryAfter(dec, r, class)
	d.metrics.Step(dec.Phase, dec.Step, r.Outcome)
	if r.Outcome == statemachine.Failed || r.Outcome == statemachine.FailedTerminal {
		d.metrics.StepError(dec.Phase, dec.Step, class.Name)
	}
	return obj, r, w.encoded, nil
}

// keep applies what happened (r) to the status the decision was made on,
// carries out the request commands it served, and keeps the result in obj
// and w, to be written when a crash would need it.
func (d *phaseDriver[Spec, Status, S, P]) keep(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], c choice[S, P], r statemachine.Report, before []byte) (statemachine.Status[S, P], *exit[Spec, Status]) {
	next, err := d.m.Apply(c.st, c.dec, r)
	if err != nil {
		return next, d.end(ctx, log, obj, w, controller.Result{}, fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, err))
	}
	if r := d.terminatingRefusal(obj, c.read); r != nil && next.Refused == nil {
		next.Refused = r // reported as any refusal is: status, log, metric, history
	}
	next.ObservedGeneration, next.ObservedDeletion = obj.Generation, obj.Terminating()
	// A request command whose token this decision served is removed in
	// the write that records it served.
	next, served := d.m.ApplyCommands(c.intent, next, r.Now)
	if !next.Equal(c.read) {
		*machineStatusOf[S, P](&obj.Status) = next
		w.moves = append(w.moves, move[S, P]{intent: c.intent, read: c.read, next: next, now: r.Now, commands: served})
		if c.dec.Action == statemachine.Run {
			w.step, w.atStep, w.before, w.beforeSt, w.atMove = true, obj.Status, before, w.stored, len(w.moves)
		}
	}
	d.metrics.Observe(obj.Key, next.Target, next.Phase)
	return next, nil
}

// then says what follows the decision c, which led to the status next: an
// operation given up, another decision at once, or the end of the
// reconcile with when to come back.
func (d *phaseDriver[Spec, Status, S, P]) then(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], c choice[S, P], r statemachine.Report, next statemachine.Status[S, P]) *exit[Spec, Status] {
	dec, now := c.dec, c.now
	end := func(res controller.Result, err error) *exit[Spec, Status] { return d.end(ctx, log, obj, w, res, err) }
	if next.Failure != nil && next.Phase != dec.Phase && (dec.Action == statemachine.Run || dec.Action == statemachine.Expire) {
		written, t, err := d.flush(ctx, log, obj, w)
		if t != turnDecide {
			return exitOf(written, t, controller.Result{}, err)
		}
		return exitOf(d.gaveUp(written, c.intent, next, r.Err, now))
	}
	switch dec.Action {
	case statemachine.Begin, statemachine.Complete, statemachine.Abort:
		return exitOf(obj, turnDecide, controller.Result{}, nil)
	case statemachine.Wait:
		return end(controller.Result{RequeueAfter: until(now, d.waits.Next(obj.Key, waits.Point(dec.Operation.ID, "", 0), now, d.wait), dec.Deadline), Trigger: triggerTimer}, nil)
	case statemachine.Backoff:
		return end(controller.Result{RequeueAfter: until(now, dec.Until.Sub(now), dec.Deadline), Trigger: triggerRetry}, nil)
	case statemachine.Hold:
		return end(controller.Result{}, nil)
	case statemachine.Nothing:
		// Settled: come back when the next timer is due, and to observe the
		// phase's health again.
		var after time.Duration
		why := triggerTimer
		if !dec.Until.IsZero() {
			after = until(now, dec.Until.Sub(now), time.Time{})
		}
		if ps := d.phases[c.st.Phase]; len(ps.Health) > 0 && (after == 0 || ps.HealthEvery < after) {
			after, why = ps.HealthEvery, triggerDrift
		}
		if after == 0 {
			return end(controller.Result{}, nil)
		}
		return end(controller.Result{RequeueAfter: after, Trigger: why}, nil)
	case statemachine.Run:
		switch r.Outcome {
		case statemachine.Done:
			return exitOf(obj, turnDecide, controller.Result{}, nil)
		case statemachine.Progressed:
			return end(controller.Result{RequeueAfter: d.progress}, nil)
		case statemachine.Pending:
			return end(controller.Result{RequeueAfter: until(now, d.waits.Next(obj.Key, waits.Point(dec.Operation.ID, dec.Step, dec.Operation.Attempts), now, d.wait), dec.Deadline), Trigger: triggerTimer}, nil)
		}
		err := fmt.Errorf("%s %q: step %s of operation %s (%v), attempt %d: %w", d.c.Kind(), obj.Key, dec.Step,
			dec.Operation.ID, dec.Operation.Phase, next.Operation.Attempts, cmp.Or(r.Err, errors.New(r.Outcome.String())))
		return end(controller.Result{}, controller.RetryAfter(err, until(r.Now, next.Operation.RetryAt.Sub(r.Now), dec.Deadline)))
	}
	return end(controller.Result{}, nil)
}

// gaveUp ends a reconcile whose operation was just given up (a terminal
// failure, its attempts used up, its deadline passed): the failure, recorded
// in status, is the reconcile's error, so the controller logs and counts it
// once. When the FailTo phase holds the document for an operator, the error
// is terminal; when a rule leads on (deletion of a failed document, a retry
// lap), the key is queued again at once and the next operation's own
// backoff applies.
func (d *phaseDriver[Spec, Status, S, P]) gaveUp(obj *store.Object[Spec, Status], intent S, next statemachine.Status[S, P], stepErr error, now time.Time) (*store.Object[Spec, Status], turn, controller.Result, error) {
	f := next.Failure
	stepErr = withoutTerminal(stepErr) // whether the failure is terminal for the key is decided below
	err := fmt.Errorf("%s %q: %v gave up (%s) in step %q of operation %s, now %v: %w", d.c.Kind(), obj.Key,
		f.Operation.Phase, f.Cause, f.Step, f.Operation.ID, next.Phase, cmp.Or(stepErr, errors.New(f.Reason)))
	if dn, derr := d.m.Decide(intent, next, now); derr == nil && dn.Action == statemachine.Hold {
		return nil, turnEnd, controller.Result{}, controller.Terminal(err)
	}
	return nil, turnEnd, controller.Result{}, controller.RetryAfter(err, 0)
}

// fold records in st what the machine decides from beside the intent: the
// tokens of the requests obj's spec carries and the due times of the timers
// computed from obj.
func (d *phaseDriver[Spec, Status, S, P]) fold(obj *store.Object[Spec, Status], st statemachine.Status[S, P]) statemachine.Status[S, P] {
	var reqs map[string][]string
	if hr, ok := any(obj.Spec).(HasRequests); ok {
		reqs = hr.Requests()
	}
	for _, name := range d.requests {
		// An operator's request command is a token beside the spec's.
		st = st.Request(name, slices.Concat(reqs[name], st.RequestCommands(name))...)
	}
	for _, name := range d.computed {
		st = st.Due(name, d.timers[name](obj))
	}
	return st
}

// settledMoves logs and counts what a settled object begins without a
// change of intent: a drift repair (with what was observed), a timer. A
// request is counted when it is recorded served (see served).
func (d *phaseDriver[Spec, Status, S, P]) settledMoves(log *zap.Logger, key string, dec statemachine.Decision[S, P], st statemachine.Status[S, P]) {
	switch {
	case len(dec.Drift) > 0:
		d.metrics.Drift(dec.Phase)
		if ce := log.Check(zap.WarnLevel, "drift: repairing"); ce != nil {
			observed := make([]string, len(dec.Drift))
			for i, r := range dec.Drift {
				c, _ := st.Condition(r.Condition)
				observed[i] = fmt.Sprintf("%s=%t (%s)", r.Condition, c.Status, c.Reason)
			}
			ce.Write(zap.String("key", key), zap.Any("phase", dec.Phase), zap.Any("repair", dec.Next), zap.Strings("observed", observed))
		}
	case dec.Request != "":
		// Counted once the write that records its tokens served is
		// stored (see served).
	case dec.Timer != "":
		d.metrics.Timer(dec.Timer)
	}
}

// until returns d, or the time left until deadline when that is sooner, so
// that a waiting operation is looked at again when its deadline passes.
func until(now time.Time, d time.Duration, deadline time.Time) time.Duration {
	if !deadline.IsZero() {
		d = min(d, deadline.Sub(now))
	}
	return max(d, time.Millisecond)
}

// report logs and counts what a status write changed: a phase change (with
// the failure that caused it, if any) and a refusal that began.
func (d *phaseDriver[Spec, Status, S, P]) report(ctx context.Context, log *zap.Logger, key string, intent S, read, next statemachine.Status[S, P], now time.Time) {
	if next.Refused != nil && (read.Refused == nil || *read.Refused != *next.Refused) {
		d.metrics.Refused(next.Phase)
		log.Warn("intent refused", zap.Any("intent", next.Refused.Intent), zap.Any("phase", next.Phase),
			zap.String("reason", next.Refused.Reason), zap.Any("serving", next.Target))
	}
	if next.Phase == read.Phase {
		return
	}
	d.metrics.Transition(key, read.Phase, next.Phase, now)
	if d.tracing != nil {
		d.tracing.PhaseChanged(ctx, read.Phase, next.Phase)
	}
	failed := next.Failure != nil && (read.Failure == nil || !read.Failure.At.Equal(next.Failure.At))
	if failed {
		d.metrics.Failed(read.Phase, next.Failure.Cause) // the reconcile's error says why
	}
	if ce := log.Check(zap.InfoLevel, "phase changed"); ce != nil {
		fields := []zap.Field{zap.Any("from", read.Phase), zap.Any("to", next.Phase), zap.Any("intent", intent)}
		if !read.Since.IsZero() {
			fields = append(fields, zap.Duration("after", now.Sub(read.Since)))
		}
		ce.Write(fields...)
	}
}

// unknownIntent records in status that obj's intent is no state of the
// machine (it was written without the driver's admission) and ends the
// reconcile with a terminal error: the spec must change.
func (d *phaseDriver[Spec, Status, S, P]) unknownIntent(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], read statemachine.Status[S, P], intent S, cause error) (*store.Object[Spec, Status], turn, controller.Result, error) {
	next := read
	next.Refused = &statemachine.Refusal[S]{Intent: intent, Reason: cause.Error()}
	next.ObservedGeneration, next.ObservedDeletion = obj.Generation, obj.Terminating()
	if next.Equal(read) {
		return nil, turnEnd, controller.Result{}, controller.Terminal(fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, cause))
	}
	*machineStatusOf[S, P](&obj.Status) = next
	if _, err := d.writeStatus(ctx, obj); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, turnReread, controller.Result{}, err
		}
		return nil, turnEnd, controller.Result{}, err
	}
	d.report(ctx, log, obj.Key, intent, read, next, time.Now())
	d.recordStatus(ctx, obj, intent, read, next, time.Now())
	return nil, turnEnd, controller.Result{}, controller.Terminal(fmt.Errorf("%s %q: %w", d.c.Kind(), obj.Key, cause))
}

// writeStatus writes obj's status, conditional on obj's revision, and returns
// obj with the stored metadata. Only the status is encoded, and the object
// written is not decoded again: its spec is the one read at that revision
// and its status the one just written.
func (d *phaseDriver[Spec, Status, S, P]) writeStatus(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], error) {
	obj, _, err := d.writeEncoded(ctx, obj)
	return obj, err
}

// writeEncoded is writeStatus, and returns the status written, encoded.
func (d *phaseDriver[Spec, Status, S, P]) writeEncoded(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], []byte, error) {
	doc, err := d.c.EncodeStatus(obj)
	if err != nil {
		return nil, nil, err
	}
	var stored store.Document
	if err := d.echoes.Write(obj.Key, func() (int64, error) {
		stored, err = d.c.Backend().UpdateStatus(ctx, doc)
		return stored.Meta.Revision, err
	}); err != nil {
		return nil, nil, err
	}
	obj.Meta = stored.Meta
	return obj, doc.Status, nil
}

// recordOver records the outcome of a step whose status write conflicted:
// the document changed while the step ran (a label, the spec, a deletion
// request). The outcome is a fact about the world, and dropping it would
// call the step again at once, however often it has failed. So while the
// stored status is still the one the step started from (before, as
// EncodeStatus encodes it), the status the step left in obj is written onto
// the document as it now is. Its observed generation and deletion stay
// those the step ran under, so the next pass sees what changed and acts on
// it. A status someone else changed meanwhile wins: the conflict is
// returned, and the step's outcome is dropped for the next pass to decide
// on what is stored.
func (d *phaseDriver[Spec, Status, S, P]) recordOver(ctx context.Context, obj *store.Object[Spec, Status], before []byte, beforeSt statemachine.Status[S, P]) (*store.Object[Spec, Status], error) {
	for attempt := 0; ; attempt++ {
		cur, err := d.c.Get(ctx, obj.Key)
		if err != nil {
			return nil, err
		}
		// The operator's fields of the status (a pause, commands) may
		// have changed meanwhile: they are compared as they were, and
		// written as they are now.
		ms := machineStatusOf[S, P](&cur.Status)
		paused, commands := ms.Paused, ms.Commands
		ms.Paused, ms.Commands = beforeSt.Paused, beforeSt.Commands
		doc, err := d.c.EncodeStatus(cur)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(doc.Status, before) {
			return nil, &store.Error{Op: "update status", Kind: d.c.Kind(), Key: obj.Key,
				Err: fmt.Errorf("%w: the status changed while a step ran", store.ErrConflict)}
		}
		cur.Status = obj.Status
		ms = machineStatusOf[S, P](&cur.Status)
		ms.Paused, ms.Commands = paused, commands
		written, err := d.writeStatus(ctx, cur)
		if !errors.Is(err, store.ErrConflict) || attempt == d.conflicts {
			return written, err
		}
	}
}

// errStepTimeout is the cause of a step context that ran out of its phase's
// StepTimeout.
var errStepTimeout = errors.New("driver: step timed out")

// run calls the step dec names, within its phase's step timeout, and
// classifies its result, and its error by the machine's error classes.
func (d *phaseDriver[Spec, Status, S, P]) run(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P]) (out statemachine.Outcome, class statemachine.ErrorClass, err error) {
	if d.tracing != nil {
		var span trace.Span
		ctx, span = d.tracing.StartStep(ctx, obj.Key, dec)
		defer func() { spans.EndStep(span, out, err) }()
	}
	if d.history != nil {
		start := journal.StepStarted(ctx, d.history, &obj.Meta, dec)
		defer func() {
			journal.StepEnded(ctx, d.history, &obj.Meta, d.scrubber(obj), dec, start, out, class.Name, err)
		}()
	}
	out, err = d.call(ctx, obj, dec)
	out, class = d.classify(dec.Step, out, err)
	return out, class, err
}

// call calls the step dec names, within its phase's step timeout, and
// classifies its result.
func (d *phaseDriver[Spec, Status, S, P]) call(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P]) (out statemachine.Outcome, err error) {
	ps := d.phases[dec.Phase]
	stepCtx, cancel := context.WithTimeoutCause(ctx, ps.Bounds.StepTimeout, errStepTimeout)
	defer cancel()
	out, err = callStep(stepCtx, dec.Step, d.steps[dec.Step], obj, dec.Operation.ID)
	err = d.scrubber(obj).Error(err)
	if ctx.Err() == nil && context.Cause(stepCtx) == errStepTimeout && out != statemachine.Done {
		return statemachine.Failed, fmt.Errorf("step %s timed out after %v: %w", dec.Step, ps.Bounds.StepTimeout, cmp.Or(err, errStepTimeout))
	}
	switch {
	case errors.Is(err, controller.ErrTerminal):
		return statemachine.FailedTerminal, err
	case err != nil && out != statemachine.FailedTerminal:
		return statemachine.Failed, err
	}
	return out, err
}

// callStep calls step; a panic is recovered and returned as the step's
// failure, so it counts as an attempt, with the same backoff and bounds. The
// error, recorded in status, names the panic; the stack goes to the log.
func callStep[Spec, Status any](ctx context.Context, name string, step StepFunc[Spec, Status], obj *store.Object[Spec, Status], opID string) (out statemachine.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			controller.LoggerFrom(ctx).Error("step panicked", zap.String("key", obj.Key), zap.String("step", name),
				zap.String("operation", opID), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			out, err = statemachine.Failed, fmt.Errorf("step %s panicked: %v", name, p)
		}
	}()
	return step(ctx, obj, opID)
}

// observe runs the observers of the conditions reqs name (a completion's, or
// a phase's health) and returns st with the observations recorded.
func (d *phaseDriver[Spec, Status, S, P]) observe(ctx context.Context, obj *store.Object[Spec, Status], st statemachine.Status[S, P], reqs []statemachine.Require, now time.Time) (statemachine.Status[S, P], error) {
	obs := make([]statemachine.Observation, 0, len(reqs))
	for _, req := range reqs {
		ok, reason, err := d.callObserver(ctx, obj, st.Phase, req.Condition)
		if err != nil {
			return st, fmt.Errorf("%s %q: observing %s: %w", d.c.Kind(), obj.Key, req.Condition, err)
		}
		obs = append(obs, statemachine.Observation{Name: req.Condition, Status: ok, Reason: reason})
	}
	return st.Observe(now, obs...), nil
}

// callObserver calls the observer of condition, in a span when tracing is
// on.
func (d *phaseDriver[Spec, Status, S, P]) callObserver(ctx context.Context, obj *store.Object[Spec, Status], phase P, condition string) (ok bool, reason string, err error) {
	if d.tracing != nil {
		var span trace.Span
		ctx, span = d.tracing.StartObserve(ctx, obj.Key, phase, condition)
		defer func() { spans.EndObserve(span, ok, reason, err) }()
	}
	ok, reason, err = d.observers[condition](ctx, obj)
	sc := d.scrubber(obj)
	return ok, sc.String(reason), sc.Error(err)
}

// remove ends the life of a document settled in the final pair: it deletes
// it, if it is not Terminating yet, then removes the driver's finalizer.
func (d *phaseDriver[Spec, Status, S, P]) remove(ctx context.Context, obj *store.Object[Spec, Status]) (*store.Object[Spec, Status], turn, controller.Result, error) {
	key := obj.Key
	fo := guarded.New(d.c, obj, &d.echoes)
	if !obj.Terminating() {
		err := d.c.Delete(ctx, key, store.DeleteOptions{UID: obj.UID, Revision: obj.Revision})
		if errors.Is(err, store.ErrConflict) {
			return nil, turnReread, controller.Result{}, err
		}
		if err == nil {
			// Terminating now, unless it had no finalizer left and is gone.
			err = fo.Refresh(ctx)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, turnEnd, controller.Result{}, err
		}
		if err != nil {
			d.echoes.Removal(obj.UID)
			d.gone(key)
			return nil, turnEnd, controller.Result{}, nil
		}
	}
	if err := finalizer.Remove(ctx, fo, d.finalizer); err != nil {
		return nil, turnEnd, controller.Result{}, err
	}
	d.echoes.Removal(obj.UID)
	d.gone(key)
	return nil, turnEnd, controller.Result{}, nil
}

// withoutTerminal returns the error a [controller.Terminal] error in err's
// chain marks terminal, or err when there is none (or it marks nothing).
func withoutTerminal(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			if errs := u.Unwrap(); len(errs) == 2 && errs[0] == controller.ErrTerminal {
				return errs[1]
			}
		}
	}
	return err
}
