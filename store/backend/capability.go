package backend

import "context"

// Compactor is implemented by backends that can discard history on demand.
// Package storetest uses it to check [store.ErrCompacted]; a backend whose
// store compacts only on its own schedule implements it in its test
// wrapper.
type Compactor interface {
	// Compact discards the change history up to and including revision:
	// afterwards a watch from an earlier revision fails with
	// [store.ErrCompacted], and so does a watch that has not yet received a
	// discarded change. A revision beyond the backend's current one is an
	// error matching [store.ErrInvalid] (see [CheckCompact]).
	Compact(ctx context.Context, revision int64) error
}

// Unfenced is implemented by a backend that cannot check a fence
// ([store.WithFence]) in the same atomic step as a write, such as a store
// on the Kubernetes API, which has no transaction across objects. Such a
// backend refuses every fenced write rather than perform it unchecked (see
// [RefuseFence]); a program that needs fenced writes, such as a controller
// manager running several replicas, asks for this interface to refuse the
// backend at start-up instead of at its first write.
type Unfenced interface {
	// FencingUnsupported returns the error fenced writes fail with; they
	// match it with errors.Is.
	FencingUnsupported() error
}
