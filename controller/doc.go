// Package controller runs reconcilers: it turns changes in a store into keys,
// queues them, and calls a [Reconciler] for each key with a pool of workers,
// retrying failures with backoff, on one replica or spread over several.
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
// # Driving State/Phase machines
//
// A [Driver] is the Reconciler of documents governed by a
// statemachine.Machine. For each key it reads the newest document, applies
// the finalizer gate, asks the machine for its next decision, runs the step
// the decision names, and writes phase, conditions, checkpoint and operation
// id in one conflict-checked status write, deciding again until the document
// settles, waits, or fails. Operation ids are persisted before the first step
// of their operation runs and reused on every retry, so a crash at any point
// resumes at the first unfinished step. A step's outcome survives a write
// someone else made while it ran (a label, the spec, a deletion request): the
// status write conflicts, and the outcome is recorded on the document as it
// now is, unless its status changed too; a failing step is never called
// again just because its document was touched. A document deleted from the
// store is driven to the machine's final pair before its finalizer is
// removed.
//
//	drv, err := driver.New(gateways, machine, driver.Config[GatewaySpec, GatewayStatus]{
//		Steps:     map[string]driver.StepFunc[GatewaySpec, GatewayStatus]{"create_namespace": createNamespace /* … */},
//		Observers: map[string]driver.ObserverFunc[GatewaySpec, GatewayStatus]{"deployment_available": deploymentAvailable},
//	})
//	ctrl, err := controller.New(controller.Config{Name: "gateway", Reconciler: drv, Sources: []controller.Source{drv.Source()}})
//
// A parent's step cascades to its children by setting their intent and
// waiting until they are gone ([Driver.Retire]) or settled ([Driver.Settle]);
// it never reaches into a child's cleanup. [Driver.UpdateSpec] writes a new
// intent after the machine admits it from the phase read at the same
// revision, so an intent past a point of no return is refused with an error
// naming the phase.
//
// # The driver's writes
//
// The driver writes a status only when a crash would need what it holds,
// and never writes a status it did not change. What a reconcile decides is
// kept in memory until one of these writes, which stores all of it:
//
//   - Before a step runs, if the checkpoint of the step done before it is
//     not stored: a crash then runs no step again past its checkpoint (only
//     the step it interrupted). This is the one checkpoint per step.
//   - Before a step runs, if its operation's id is not stored: a crash then
//     resumes the operation under the same id, which a step may key
//     non-idempotent work on. When the machine's initial phase is
//     transitional, a document is created in the phase of its first
//     operation, which a crash before the first status write begins again
//     whatever the intent: that operation takes the document's UID as its
//     id (DriverConfig.NewOperationID names the others), stored since the
//     document was created, so its begin needs no write of its own.
//   - When the reconcile ends, if the status changed: a failed step's
//     attempts and retry time (the backoff schedule must survive a restart),
//     a give-up with its reason, the observations of an operation that waits,
//     a completion into a settled phase, a refusal, served requests and fired
//     timers.
//
// So the moves that follow a step done within one reconcile ride on a write
// that happens anyway: an operation's completion, with the observations it
// was judged from, and the next operation's begin with its new id are
// stored by the write that checkpoints the step before the next operation's
// first step, and the last step's checkpoint is the write of the completion
// that settles the document. A gateway going from Creating (three steps) to
// Started (through Starting, three steps) takes six status writes, one per
// step, where a write per decision took ten (Creating's begin, its three
// checkpoints and its completion, and the same for Starting):
//
//	write  made before step       holds
//	1      create_database         create_namespace's checkpoint; Creating's begin (its id: the UID)
//	2      create_runtime_domain   create_database's checkpoint
//	3      create_deployment       create_runtime_domain's checkpoint; Creating's observations and
//	                               completion; Starting's begin and its id
//	4      create_service          create_deployment's checkpoint
//	5      activate_runtime_domain create_service's checkpoint
//	6      — (the reconcile ends)  activate_runtime_domain's checkpoint; Starting's observations and
//	                               completion into Started
//
// A crash between writes loses only what can be decided again: a step done
// but not stored runs again (steps are idempotent), observations are made
// again, and a begin not stored begins again, with a new id, before any step
// of it ran. A machine with a final pair adds one spec write per document,
// its finalizer; removing a document takes a delete and the finalizer's
// removal; the completion into the final pair is not written.
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
// # One watch per kind, and reads from the cache
//
// A [Manager] shares one informer cache per store among all its
// controllers: it makes an informer.Factory over each store they read (or
// takes [ManagerConfig.Informers]) and gives it, when it runs, to every
// source and reconciler that reads through a cache ([CacheUser]): the
// watching sources, drivers, and the garbage collector of package cascade.
// However many controllers follow a kind, the store sees one watch of it,
// and a driver reads its documents from the cache. Each driver read waits
// until the cache shows the last write that driver made to the document
// (expectations.Gate), so a reconcile never acts on a view older than its
// own writes; and before a step runs on a document read from the cache,
// the driver reads the store once to check that it still holds that
// revision, since the cache may not yet show another replica's writes
// (the replica that led before this one): a step runs only on what is
// stored. A [Controller] run alone does the same for itself.
// [Config.Uncached] opts a controller out: its sources watch on their own
// and its reconciler reads the store.
//
//	drv, _ := driver.New(gateways, machine, driver.Config[Spec, Status]{...})
//	ctrl, _ := controller.New(controller.Config{Sources: []controller.Source{drv.Source(), controller.Owns(backend, "Route", "Gateway")}, ...})
//	gc, _ := cascade.NewController(cascade.Config{Backend: backend})
//	mgr, _ := manager.New(manager.Config{Controllers: []*controller.Controller{ctrl, gc}})
//	// mgr.Run opens one watch of ApiGateway, one of Route, …
//
// # Running and stopping
//
// [New] starts nothing. [Controller.Run] runs the sources and
// [Config.Workers] workers until its context ends, then stops the sources,
// drops the keys still waiting, lets reconciles in flight finish with a live
// context for up to [Config.ShutdownGracePeriod], cancels those still
// running, and returns once every goroutine it started has stopped.
//
// # Replicas
//
// A [Manager] runs several controllers in one of three modes ([Mode]):
// [Single] runs them all; [LeaderElection] runs them on the one replica that
// holds a lease; [Sharded] hashes keys into shards ([ShardOf]), each a lease,
// and spreads the shards evenly over the live replicas, moving them as
// replicas come and go. Leases come from a store.Leaser, usually the store
// the controllers watch. A replica reconciles a key only while it holds the
// key's lease, stops at once (cancelling the reconcile's context) when it
// loses it, and every reconcile's context carries the lease's fence
// (store.WithFence), so the store refuses the writes of a replica that lost
// its lease. A store that cannot check fences atomically (the Kubernetes
// backend) needs [ManagerConfig.Unfenced], the stated choice to run without
// that last guard. See docs/scale-out.md for the reasoning.
//
// # Health, leadership and endpoints
//
// A [Manager] tells operators whether its replica is healthy and doing its
// share. [Manager.IsLeader] and [Manager.OwnedShards] report the lead and the
// shards it holds, and [ManagerConfig.OnLeadershipChange] is called, from a
// goroutine of [Manager.Run], each time they change.
// [Manager.CheckReadiness] passes once Run runs, every controller's sources
// have listed ([Controller.HasSynced]) and, in Sharded mode, the replica
// holds its share of the shards; as in Kubernetes, a standby replica waiting
// for the lead is ready, and its leadership is reported apart.
// [Manager.CheckLiveness] fails while a reconcile has run past
// [ManagerConfig.StuckReconcileAfter], or the lease calls have failed for
// longer than the lease duration. [Manager.Handler] serves them as /readyz
// and /healthz in Kubernetes' format, with /metrics and, when asked,
// net/http/pprof's /debug/pprof/; [Manager.Serve] runs that handler on an
// address until its context ends.
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
// workqueue_* series. With [ManagerConfig.MetricsRegisterer] set, a manager
// exports leader_election_master_status (client-go's gauge),
// tend_manager_owned_shards and tend_manager_lease_renew_failures_total, as
// its mode calls for. With [Config.Logger] set a controller logs each failure
// once, with the fields controller, key and reconcileID (and traceID and
// spanID when it traces). A driver's reconciles add kind, and log one line
// "phase changed" per transition with from, to, intent and after, the time
// the document spent in the phase it left; the reconcileID joins the line to
// the reconcile's span.
//
// # History and secrets
//
// With [DriverConfig.History] set, a driver records each document's history
// in the store beside it (package history): each transition, the start and
// the end (outcome, duration, error) of each step call, each refusal, each
// operation given up (at its deadline, out of attempts, terminally), each
// drift repair, request and timer, and what became of each operator command
// (see Operators). Each entry carries the reconcileID of the
// reconcile that recorded it, and its trace. Recording never blocks or fails
// a reconcile. [HandlerConfig.History] serves the histories over HTTP.
//
// Fields of a document's Spec or Status tagged tend:"sensitive" are secrets
// (package redact): a driver replaces their values with "[redacted]" in what
// it builds from the document — the errors of steps and observers (before
// they reach the status, spans, history, or the controller's log), the
// reasons observers give, history entries, and every line logged through
// the reconcile's logger ([LoggerFrom]), a step's own lines included.
//
// # Operators
//
// A person on call acts on a document through two fields of its status
// that only operators write (package operator does it for them, and the
// tend command and the console through it): status.paused and
// status.commands. Every replica honours them, since they live in the
// document; an operator's write is nobody's own write, so it queues the
// document at once, whatever backoff it was waiting out.
//
//   - Paused: while it is set, the driver runs no step, makes no decision,
//     writes nothing and schedules nothing for the document; its
//     reconciles end at once. A step already running finishes and its
//     outcome is written (the pause is kept); nothing runs after it. The
//     hold is explicit and covers deletion too: a document whose deletion
//     is requested while it is paused is driven to its final pair only
//     once resumed (a machine without a final pair puts no finalizer on its
//     documents, so the store deletes them at once, paused or not).
//     Commands wait for the resume. Resuming does not reset a failing
//     step's backoff, and an operation's deadline counts on through a
//     pause. With metrics on, tend_paused_documents counts the paused
//     documents this replica saw.
//   - Commands: at the start of each pass, before it decides, the driver
//     carries out the commands in order (statemachine.Machine.ApplyCommands
//     says what each verb does and when it is refused) and removes each, in
//     one write with its effect: a retry (the failed step runs at once, its
//     attempts forgotten; from Fault, the failed operation resumes with its
//     id and checkpoint), a skip of the step that failed, a move out of
//     Fault into a phase where the intent is served, a request served once
//     with the command's id as its token. A request command stays in the
//     status until its token is served, and is removed by the write that
//     records it served, so it is served once across crashes and
//     conflicts. A write that conflicts is decided again on the document as
//     it now is, so a command is never carried out twice nor lost; a step's
//     outcome written over a status an operator changed while the step ran
//     keeps the operator's fields as they are now. Each outcome is recorded
//     in the document's history (an entry of type history.Operator: the
//     verb, the command's id, its author, applied or refused with the
//     reason, the phase and the phase it moved to), logged, and counted in
//     tend_operator_commands_total by verb and result.
//
// A [Manager] records, for each [Driver] it runs, the driver's
// [Driver.Registration] in a document of kind registry.Kind keyed
// by the driven kind — the machine as a statemachine.Descriptor, the
// finalizer the driver owns, the prefix of its presence leases, the
// replica and the time — so that a program without the user's Go types
// can read and act on the kind's documents. It is written only when the
// machine, finalizers or prefix changed; a store not configured with
// registry.Kind records nothing (logged once, at debug level). While
// Run runs, in every mode, each replica also holds a presence lease
// "<LeasePrefix>presence/<kind>/<Identity>" ([PresencePrefix]) in the
// kind's own store, where operators look for it (oncall.Client.Served),
// and releases it when Run returns.
//
// # Tracing
//
// With [Config.TracerProvider] and [DriverConfig.TracerProvider] set (an
// OpenTelemetry trace.TracerProvider, usually the same one), a controller and
// its driver start spans from the tracer named [TracerName]. Nil means no
// spans: the code that makes them is skipped. There is no global provider.
//
//   - [SpanReconcile] ("tend.reconcile"), one per reconcile, a child of the
//     span in the context given to [Controller.Run] (a root when there is
//     none), with tend.controller, tend.key, tend.reconcile.id (the
//     reconcileID of the reconcile's logs) and, when it ends,
//     tend.reconcile.result: success, requeue_after, error, terminal or
//     panic. A failed reconcile's span has the status Error and the error
//     recorded. A driver adds to it an event [EventPhaseChanged]
//     ("tend.phase_changed", with tend.transition.from and
//     tend.transition.to) for each phase change it writes.
//   - [SpanStep] ("tend.step"), one per call of a step's action, a child of
//     the span in the reconcile's context, with tend.kind, tend.key,
//     tend.state (the intent served), tend.phase, tend.step.name,
//     tend.operation.id, tend.step.attempt (1 for the first call, one more
//     than the failures the operation recorded for the step) and, when it
//     ends, tend.step.outcome: done, progressed, pending, failed or
//     failed-terminal. A failed step's span has the status Error and the
//     error recorded. The step's context carries its span, so the spans the
//     step starts from it are its children.
//   - [SpanObserve] ("tend.observe"), one per call of an observer, with
//     tend.kind, tend.key, tend.phase, tend.condition.name and, when it ends,
//     tend.condition.status and tend.condition.reason (when not empty), or
//     the status Error.
package controller
