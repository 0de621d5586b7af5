// Package driver drives documents governed by a State/Phase machine
// (package statemachine): a [Driver] is the Reconciler (package controller)
// of one kind of document, and runs the machine's steps against the world
// until each document's phase serves its intent.
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
// naming the phase. A program that wrote an intent waits for its result
// with [Driver.Await]: nil once the document settled at it, or an error
// saying why it will not (held in Fault, refused, removed).
//
// # The driver's writes
//
// The driver writes a status only when a crash would need what it holds,
// and never writes a status it did not change: before a step runs, if the
// checkpoint of the step done before it or its operation's id is not yet
// stored; and when the reconcile ends, if the status changed. The moves
// that follow a step done within one reconcile ride on those writes, so a
// document going through an operation of three steps takes three status
// writes, and a crash between two writes loses only what can be decided
// again. docs/design.md ("A status write per step") details each write.
//
// # Reads from the cache
//
// A driver given a cache ([Config.Cache], usually the cache its Manager of
// package manager runs) reads its documents from it, and its
// [Driver.Source] watches through it. Each read waits until the cache shows the last
// write the driver made to the document (expectations.Gate), so a reconcile
// never acts on a view older than its own writes; and before a step runs on
// a document read from the cache, the driver reads the store once to check
// that it still holds that revision, since the cache may not yet show
// another replica's writes (the replica that led before this one): a step
// runs only on what is stored.
//
// # History and secrets
//
// With [Config.History] set, a driver records each document's history
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
// that only operators write (package oncall does it for them, and the
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
// A Manager (package manager) records each driver's [Driver.Registration]
// in the store's registry (package registry), so that on-call tools read
// and act on the kind's documents without the user's Go types.
//
// # Metrics, logs and tracing
//
// A driver's reconciles log with the controller's fields and kind, and log
// one line "phase changed" per transition with from, to, intent and after,
// the time the document spent in the phase it left; the reconcileID joins
// the line to the reconcile's span.
//
// With [Config.TracerProvider] set (usually the provider given to the
// controller), a driver starts spans from the tracer named [TracerName]:
//
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
//   - an event [EventPhaseChanged] ("tend.phase_changed", with
//     tend.transition.from and tend.transition.to) on the reconcile's span
//     for each phase change it writes.
package driver
