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
//   - [Background]: the owner is removed at once; the [Collector] then deletes
//     every dependent left without an owner, and their dependents in turn.
//   - [Foreground]: the owner stays Terminating, held by
//     [ForegroundFinalizer], while the Collector deletes its dependents
//     (those with dependents of their own in the foreground too, so the
//     deepest go first). It is removed once no dependent whose reference has
//     BlockOwnerDeletion is left; dependents without the flag are deleted
//     but not waited for.
//   - [Orphan]: the owner stays Terminating, held by [OrphanFinalizer], until
//     the Collector has removed the references to it from every dependent;
//     the dependents stay.
//
// A dependent with several owners is deleted only when none is left: while
// one remains, the Collector removes the references to the owners that are
// gone or deleting in the foreground, and keeps the dependent.
//
// Delete writes the policy's finalizer and then deletes, each write
// conditional on the document read, so it is safe against concurrent
// writers. Under Background without finalizers, the owner is removed by the
// Delete call itself.
//
// # The collector
//
// A [Collector] lists the kinds of [Config.Kinds], keeps a small graph of
// UIDs and owner references in memory, and watches the kinds from the
// revisions of the lists: a lost watch resumes, and compacted history
// ([store.ErrCompacted]) makes it list the kind again and diff. The graph only
// says which documents to look at. Every decision is taken again on
// documents read from the store, and every write is conditional on what was
// read: an owner is declared missing only after a Get from the store found
// nothing (or another UID), and a dependent is deleted with its UID and
// revision as preconditions. So a lagging graph, a restart in the middle of
// a cascade, or several collectors on one store at once cost at most a
// conflict, which is retried with backoff; all progress is in the store, and
// a restarted collector picks up where the last one stopped.
//
// An owner whose kind the store does not know cannot be checked, so the
// reference is kept. Dependents are only looked for in the watched kinds.
//
// # Cycles
//
// Owner references may form cycles. A cycle nothing outside refers to and
// nobody deleted keeps its members, as in Kubernetes. Under Background a
// deleted member takes the rest with it. Under Foreground, members that each
// wait for the next would wait forever: when the Collector finds that an
// owner's blocking dependent waits, through a chain of foreground deletions,
// for the owner itself, it clears BlockOwnerDeletion on that one reference
// and the chain unwinds. The cycle is found in the graph and confirmed on
// fresh reads before that write, so it finds the cycles Kubernetes' heuristic
// can miss when several members are deleted at once, and never unblocks a
// reference outside a cycle.
//
// # Observability
//
// Logs go to [Config.Logger]. Metrics go to [Config.MetricsRegisterer]:
// cascade_dependents_deleted_total, cascade_owner_references_removed_total,
// cascade_finalizers_removed_total{finalizer}, cascade_cycles_broken_total,
// cascade_relists_total and cascade_errors_total, plus the workqueue_*
// metrics of its queue under the name "cascade".
package cascade
