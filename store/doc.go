// Package store defines the document model and the contract every tend storage
// backend implements.
//
// # Documents
//
// A [Document] is [Meta] plus two opaque payloads: Spec, written by users and
// holding their intent (the State), and Status, written only by the document's
// controller and holding its progress (the Phase, conditions, checkpoints and
// operation id). Spec and Status are written by separate calls,
// [Writer.UpdateSpec] and [Writer.UpdateStatus], which gives the single-writer
// rule for free: a user cannot move a Phase and a controller does not change
// intent.
//
// Backends see Meta structured (they index owners and labels and enforce
// finalizers) and Spec and Status as bytes. A [Collection] is the typed view a
// program uses: it encodes the user's Go types with a [Codec] (JSON by default).
//
// # Optimistic concurrency
//
// Every write carries the revision it was based on (Meta.Revision) and fails with
// [ErrConflict] when the document has changed since. Revisions come from one
// counter per backend, so they also order the backend's change history, which
// [Watcher.Watch] replays.
//
// An update that changes nothing keeps the revision and produces no watch
// event, so a controller rewriting an unchanged status does not wake itself.
// Writes whose revision is stale fail with [ErrConflict] even then.
//
// # Labels, selectors and validation
//
// [ParseSelector] reads Kubernetes label-selector syntax ("env=prod,tier in
// (web,edge),!canary") into a [Selector] with a canonical [Selector.String];
// backends translate its [Selector.Requirements] into their own queries.
// [ValidateKind], [ValidateKey], [ValidateLabels] and [ValidateFinalizer]
// state what a backend accepts; every backend checks them, so all backends
// accept the same documents.
//
// # Paged lists
//
// [ListOptions.Limit] and [ListOptions.Continue] read a large kind in pages
// ordered by key; [Collection.ListPage] is the typed form. Continue tokens
// are opaque; a malformed one fails with [ErrInvalidContinue].
//
// # Deletion and finalizers
//
// Deleting a document that has finalizers only records the time deletion was
// requested (the document is Terminating); the backend removes it when an update
// removes its last finalizer. No finalizer can be added once deletion was
// requested. Finalizer names are domain-qualified ("example.com/cleanup").
//
// # Leases and fencing
//
// [Leaser] hands out named leases with a holder, a time to live and a fencing
// token that grows with each new holder. Controllers build leader election and
// shard ownership on them. A write whose context carries a [Fence]
// (see [WithFence]) succeeds only while that lease is still held at that token,
// checked atomically with the write, so a replica that lost its lease cannot
// overwrite its successor's work.
//
// # Watches
//
// [Watcher.Watch] from a revision (typically a [ListResult.Revision])
// delivers every later change in revision order, exactly once. A revision
// older than the history the backend keeps fails with [ErrCompacted] (list
// again); a consumer that falls too far behind fails with [ErrWatchLagged]
// (watch again from its last revision). A revision the backend has not reached yet,
// such as one read through a replica that is further along, is waited for:
// the watch delivers the changes after it, so a controller that resumes
// from it misses none and sees none twice.
//
// # Conformance
//
// Package storetest exports the suite every backend must pass; the in-memory
// backend passes the same suite, so the test fake cannot drift from real stores.
// Package backend (store/backend) holds what only backend authors need: the
// write rules, the shared errors and the continue-token codec.
package store
