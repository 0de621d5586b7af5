// Package backend is for the authors of tend store backends: the rules of
// the write methods, the errors every backend returns, and the
// continue-token codec of paged lists, each written once so that every
// backend behaves alike. Programs that use a store need only package store.
//
// # Writes
//
// A backend validates a Create with [ValidateCreate] and an UpdateSpec with
// [ValidateMeta], reads the stored document, checks the revision
// precondition ([RevisionConflict] when it fails), and asks [ApplySpec]
// what an UpdateSpec does. A Delete checks its preconditions with
// [CheckDelete].
//
// # Watches and compaction
//
// [CheckWatch] refuses a negative starting revision, [Compacted] is the
// error of a watch whose history is gone, and [CheckCompact] checks the
// argument of [Compactor.Compact], the capability storetest needs to
// check [store.ErrCompacted].
//
// # Leases and fencing
//
// [CheckLease] is the preamble of every acquire and renew; [LeaseHeld] and
// [LeaseLost] are their refusals. A write whose fence no longer holds fails
// with [Fenced]. A backend that cannot check a fence atomically implements
// [Unfenced] and refuses fenced writes with [RefuseFence].
//
// # Paged lists
//
// [StartList] checks a List's options and decodes its continue token into
// a [Cursor]: the revision of the first page and the last key returned.
// A backend reads the documents after the cursor's key, ordered by key, and
// returns the token of the next page with [EncodeContinue]; [Page] does
// both for a backend that holds the matching documents in a sorted slice.
// Tokens are opaque to users; [DecodeContinue] accepts exactly the tokens
// [EncodeContinue] writes.
package backend
