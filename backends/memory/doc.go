// Package memory is the embedded, in-process [store.Backend]: the default for
// a single process, and the fake every other package tests against. It passes
// the same conformance suite (package storetest) as the real backends, so it
// cannot drift from them.
//
// # Documents
//
// [New] takes the kinds to hold in [Config]. Each write stores a new
// immutable version of the document under one lock, bumping one revision
// counter shared by all kinds, and hands back a copy: changing a document
// a read or a write returns, or the document passed in, never changes the
// store. A write's
// copy reuses the parts of the document passed in that equal the stored
// ones (see [store.Writer]), so a no-op status update allocates nothing.
// Owner UIDs and label values are indexed, so [Store.List] by owner or by an
// equality selector does not scan the kind; a List with no narrowing reuses
// a sorted key list that only a create or a removal invalidates. A page of
// a paged List ([store.ListOptions.Limit]) holds the documents stored when
// it is read whose keys follow the last key of the page before: a document
// no write touched between pages appears exactly once.
//
// # Watches
//
// Each kind keeps its last [Config.History] changes in a ring. A watch is a
// position in that ring: [store.Watch.Next] hands out the next change, or
// waits on a channel the next write closes. An event's document is the
// stored version itself, shared by every watch and never copied: read it,
// and Clone it before changing it (see [store.Event]). No goroutine serves a watch and
// writers never wait for watchers. A watch that leaves more than
// [Config.WatchBuffer] of the changes made since it began unread fails with
// [store.ErrWatchLagged] and can resume from its last revision, because the
// history is longer than the buffer; a watch from a revision older than the
// history, or overtaken by [Store.Compact], fails with [store.ErrCompacted].
//
// # Leases and fences
//
// Leases live beside the documents under the same lock, so a fenced write
// ([store.WithFence]) checks its lease in the same step as the write. Lease
// expiry follows [Config.Now], so tests can drive it with testing/synctest.
//
// # Snapshots
//
// [Store.Snapshot] and [Store.SnapshotFile] save the documents, leases and
// revision; [Config.Restore] starts a store from them, so a demo can stop and
// resume. A snapshot carries a SHA-256 checksum; a truncated or altered one
// fails with [ErrBadSnapshot].
package memory
