// Package controller runs reconcilers: it turns changes in a store into keys,
// queues them, and calls a [Reconciler] for each key with a pool of workers,
// retrying failures with backoff.
//
// It is the runner under the State/Phase driver (package driver) and the
// Manager (package manager), and works on its own for any reconciler.
//
// # Reconcilers are level-triggered
//
// A [Reconciler] has one method, Reconcile(ctx, key). It is given the key of
// an object, never the event that queued it nor the reason: it reads the
// newest state and drives the world towards it, so a burst of changes
// collapses into one reconcile and a missed event costs nothing once another
// arrives. [ReconcilerFunc] adapts a function. The same key is never
// reconciled by two workers at once.
//
// What a reconcile returns decides what happens next:
//
//   - Result{} and a nil error: done until a source queues the key again.
//   - Result{RequeueAfter: d}: reconciled again after d (polling progress no
//     source reports). The key's backoff starts over.
//   - An error: retried after the delay the rate limiter
//     ([Config.RateLimiter]) returns, growing with each consecutive failure.
//   - An error made by [Terminal] (it matches [ErrTerminal]): logged, counted
//     and not retried until the key is queued again.
//   - A panic: recovered, logged with its stack, counted and retried like an
//     error.
//
// Each reconcile may be bounded by [Config.Timeout]. Its context carries its
// reconcile id ([ReconcileIDFrom]), a logger with the controller, key and
// reconcile id ([LoggerFrom]) and, when the controller traces, the
// reconcile's span.
//
// # Sources
//
// A [Source] queues keys through an [Enqueuer]; [Controller.Run] starts each
// one. The package provides:
//
//   - [For]: every document of a kind, from an informer (package
//     informer): each document of its cache when the source starts, then
//     each change. The informer lists, then watches from the list's
//     revision; it lists again when the store compacted the history it
//     needs (and reports what changed meanwhile), and resumes from the last
//     revision when its watch failed.
//   - [Owns]: for each document of a dependent kind, the key of its
//     controlling owner (the owner reference with Controller set and the
//     given owner kind).
//   - [Watches]: for each document of a kind, the keys a function maps it to.
//   - [Resync]: every document of a kind, periodically, at [LowPriority] so
//     the check never delays keys queued by changes.
//   - [Channel]: keys received from a channel.
//
// [SourceFunc] adapts a function for anything else. The reason a source
// gives is logged at debug level when the key is queued.
//
// # Why each reconcile ran
//
// The reconciler is given no reason, but people debugging "why did this run
// again?" want one. Each add of a key may say why ([Trigger], through
// [Enqueuer.EnqueueTrigger]): the work queue keeps the distinct triggers of
// every add a reconcile coalesces (up to eight, counting the rest), and
// [TriggersFrom] returns them from the reconcile's context. The package's
// sources say what happened ([TriggerListed], [TriggerSpec] with the
// generation, [TriggerDelete], [TriggerChange], [TriggerOwned] and
// [TriggerWatched] with the other document's kind and key, [TriggerResync],
// [TriggerChannel]); the runner gives its own requeues [TriggerRetry],
// [TriggerRequeue] or the [Result.Trigger] the reconciler chose. The
// triggers go on the reconcile's span (tend.reconcile.triggers) and its
// debug line "reconciling"; with tracing and debug logs off they cost no
// allocation. A requeue still pending (a timer) when an event queues the
// key is served by the reconcile the event starts, which then carries both
// triggers: the work queue keeps one turn per key.
//
// # Fair queues per tenant
//
// With [Config.Group] a function of the key (its tenant, say), ready keys
// are served in turn across groups, each up to its [Config.GroupWeight] in
// a row, so one tenant's backlog of 100,000 keys delays another tenant's key
// by the other groups' turns, not by the backlog; [Config.MaxInFlightPerGroup]
// caps how many keys of one group are reconciled at once. Priorities keep
// working within a group.
//
// # Reading through a cache
//
// The watching sources ([For], [Owns], [Watches], [Resync], [Events]) read
// what they are given: an informer.Factory, whose cache every consumer of
// the factory shares (so the store sees one watch per kind however many
// controllers follow it), or a store, over which each source runs an
// informer of its own. A factory must run while the controller does: a
// Manager (package manager) hands its controllers the cache it runs
// (Manager.Cache).
//
// # Running and stopping
//
// [New] starts nothing. [Controller.Run] runs the sources and
// [Config.Workers] workers until its context ends, then stops the sources,
// drops the keys still waiting, lets reconciles in flight finish with a live
// context for up to [Config.ShutdownGracePeriod], cancels those still
// running, and returns once every goroutine it started has stopped.
// Under a Manager, [Controller.RunShared] runs the controller behind the
// manager's [Gate] (the keys this replica may reconcile) with the lease's
// fence on every reconcile's context.
//
// # Metrics and logs
//
// With [Config.MetricsRegisterer] set, a controller exports
// controller-runtime's series, labelled with controller=[Config.Name], so
// existing dashboards work: controller_runtime_reconcile_total (by result:
// success, error, requeue_after), controller_runtime_reconcile_errors_total,
// controller_runtime_terminal_reconcile_errors_total,
// controller_runtime_reconcile_panics_total,
// controller_runtime_reconcile_timeouts_total,
// controller_runtime_reconcile_time_seconds,
// controller_runtime_active_workers and
// controller_runtime_max_concurrent_reconciles, plus its work queue's
// workqueue_* series. With [Config.Logger] set a controller logs each failure
// once, with the fields controller, key and reconcileID (and traceID and
// spanID when it traces).
//
// # Tracing
//
// With [Config.TracerProvider] set (an OpenTelemetry trace.TracerProvider),
// a controller starts a span [SpanReconcile] ("tend.reconcile") from the
// tracer named [TracerName] for each reconcile, a child of the span in the
// context given to [Controller.Run] (a root when there is none), with
// tend.controller, tend.key, tend.reconcile.id (the reconcileID of the
// reconcile's logs), tend.reconcile.triggers ([TriggerStrings], when it has triggers) and, when it ends, tend.reconcile.result: success,
// requeue_after, error, terminal or panic. A failed reconcile's span has the
// status Error and the error recorded. Nil means no spans: the code that
// makes them is skipped. There is no global provider.
package controller
