// Package cascade is a garbage collector for owner references: it deletes
// the documents whose owners are gone, with the propagation policies of
// Kubernetes' garbage collector, for any tend store.
//
// A dependent names its owners in [store.Meta].Owners, each by kind, key and
// UID. The UID matters: an owner deleted and created again under the same key
// is another document, and its old dependents are collected.
//
// # Policies
//
// [Delete] deletes an owner under a [Policy]:
//
//   - [Background]: the owner is removed at once; the garbage collector then
//     deletes every dependent left without an owner, and their dependents in
//     turn.
//   - [Foreground]: the owner stays Terminating, held by
//     [ForegroundFinalizer], while the garbage collector deletes its
//     dependents (those with dependents of their own in the foreground too,
//     so the deepest go first). It is removed once no dependent whose
//     reference has BlockOwnerDeletion is left; dependents without the flag
//     are deleted but not waited for.
//   - [Orphan]: the owner stays Terminating, held by [OrphanFinalizer], until
//     the garbage collector has removed the references to it from every
//     dependent; the dependents stay.
//
// A dependent with several owners is deleted only when none is left: while
// one remains, the garbage collector removes the references to the owners
// that are gone or deleting in the foreground, and keeps the dependent.
//
// Delete writes the policy's finalizer and then deletes, each write
// conditional on the document read, so it is safe against concurrent
// writers. Under Background without finalizers, the owner is removed by the
// Delete call itself.
//
// # The garbage collector is a controller
//
// [NewController] returns the garbage collector as a [controller.Controller]:
// give it to a [manager.Manager], alone or with other controllers, and
// the manager's mode applies to it as to any other. Under LeaderElection only
// the leader collects; under Sharded each replica works on the documents of
// its shards; either way every write carries the fence of the lease that
// entitles the replica to it, so a replica that lost its lease cannot write.
//
// Its sources watch the kinds of [Config.Kinds] ([controller.Watches]),
// through [Config.Cache], the informers the manager shares among its
// controllers: a process running drivers and the garbage collector on the
// same kinds opens one watch of each. A key names one
// document at one UID: a change to a document queues the document itself
// and its owners. A reconcile reads the document: an owner held by a
// policy finalizer has its dependents deleted or orphaned; a live
// dependent has its owners read; a document that is gone (or replaced
// under its key by another UID) has its dependents collected.
// Each run queues every document once all its kinds are listed, and again
// every [Config.ResyncPeriod]: that finds the dependents of an owner whose
// deletion no event reported (deleted between two kinds' first lists, or
// while the store's history was compacted).
//
// A reconcile reads the shared cache first: most find nothing to do there
// (a dependent whose owners are all present) and cost the store no read.
// One that finds a write to make reads again from the store and decides
// there, so every write is decided on documents read from the store and is
// conditional on what was read: an owner is declared missing only after a
// Get from the store found nothing (or another UID), and a dependent is
// deleted with its UID and revision as preconditions. A cache that lags
// behind the store can only make a reconcile find nothing to do yet: the
// change reaches the cache before the event that reports it queues the
// documents it concerns. So a late event, a
// replica that dies in the middle of a cascade, or several replicas at once
// cost at most a conflict, which is retried with backoff; all progress is in
// the store, and the next reconcile picks up where the last one stopped.
//
// An owner whose kind the store does not know cannot be checked, so the
// reference is kept. Dependents are only looked for in the watched kinds.
//
// # Cycles
//
// Owner references may form cycles. A cycle nothing outside refers to and
// nobody deleted keeps its members, as in Kubernetes. Under Background a
// deleted member takes the rest with it. Under Foreground, members that each
// wait for the next would wait forever: when the garbage collector finds
// that an owner's blocking dependent waits, through a chain of foreground
// deletions, for the owner itself, it clears BlockOwnerDeletion on that one
// reference and the chain unwinds. The chain is found on fresh reads, walking
// up from the owner along blocking references to owners that wait for their
// dependents, so it finds the cycles Kubernetes' heuristic can miss when
// several members are deleted at once, costs no read when the owner has no
// blocking owner of its own, and never unblocks a reference outside a cycle.
//
// # Observability
//
// Logs go to [Config.Logger]. Metrics go to [Config.MetricsRegisterer]:
// cascade_dependents_deleted_total, cascade_owner_references_removed_total,
// cascade_finalizers_removed_total{finalizer}, cascade_cycles_broken_total
// and cascade_errors_total, plus the controller's metrics and the workqueue_*
// metrics of its queue under the controller's name ([DefaultName] unless
// [Config.Name] says otherwise).
package cascade
