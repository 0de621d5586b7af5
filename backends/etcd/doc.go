// Package etcd is a [store.Backend] on etcd, through the etcd v3 client.
// Several processes sharing one cluster see one store: documents, watches,
// leases and fences all live in etcd, and a [Store] holds no state of its
// own beyond a bounded memory of the documents it read or wrote last.
//
// # Documents
//
// Each document is one key, "<prefix>docs/<kind>/<key>", whose value holds
// the metadata (JSON), the spec and the status (as given). The document's
// revision is the key's etcd ModRevision and a list's revision is the
// revision of the etcd read, so revisions are etcd's: one counter for the
// cluster, ordering every change. Every write is one etcd transaction that
// compares the document's ModRevision with the writer's precondition (zero
// for Create: nothing stored), so it happens whole or not at all.
//
// A write that keeps part of the stored document (a status write keeps the
// metadata and spec) starts from the stored value. The store remembers the
// value of the last documents it read or wrote (up to 1,024), each at its
// ModRevision, so a write whose precondition names that revision, as a
// controller's successive status writes do, needs no read before its
// transaction: one round trip instead of two. A key's ModRevision names one
// value, and the transaction compares it, so a remembered value that is no
// longer the stored one only makes the write fail with the conflict it
// would have had anyway. A write that turns out to change nothing, and so
// makes no transaction, reads the stored document to check its revision
// and fence as before.
//
// # Indexes
//
// Labels and owner UIDs are indexed by empty keys under "<prefix>labels/"
// and "<prefix>owners/", kept in the same transaction as the document. A
// [Store.List] by owner, or with a "k=v" or "k in (…)" requirement, reads
// the index and then the documents at the index's revision, so the result
// is one consistent snapshot; other requirements filter the candidates.
// The pages of a paged List ([store.ListOptions.Limit]) are etcd ranges
// with a limit, after the last key of the page before, all read at the
// first page's revision: together they are one snapshot, and once etcd has
// compacted that revision the next page fails with [store.ErrCompacted].
//
// # Finalizers
//
// Delete of a document with finalizers writes its deletion time; the
// [Store.UpdateSpec] that removes the last finalizer of a Terminating
// document deletes it and its index keys in one transaction.
//
// # Watches
//
// [Store.Watch] is one etcd watch of a kind's document keys from the asked
// revision, with previous values, so each store write gives exactly one
// event (index keys lie outside the range). The etcd client buffers events
// and resumes a broken stream from the last revision it received, so a
// watch neither lags nor loses events; a revision etcd compacted away fails
// with [store.ErrCompacted]. The Deleted event of a document removed by its
// last finalizer carries the state before that update, with no finalizers
// and the removal's revision.
//
// # Leases and fences
//
// A lease is a key "<prefix>leases/<name>" attached to an etcd lease of the
// asked time to live, rounded up to whole seconds; etcd deletes the key
// when the lease lapses, so expiry is judged by etcd's clock. The fence is
// the key's create revision: a new holder creates the key again, at a
// greater revision, while renewals (etcd keep-alives) leave it alone. A
// write fenced by [store.WithFence] adds to its transaction the comparison
// of that create revision with the fence's token, so it fails with
// [store.ErrFenced], writing nothing, once the lease expired, was released
// or passed on.
//
// # Errors
//
// etcd's answers are translated to the store's sentinels. Requests etcd
// could not serve (no leader, unreachable, timed out) fail with an error
// matching [ErrUnavailable]; the caller's cancellation returns ctx.Err().
package etcd
