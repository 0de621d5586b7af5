// Package finalizer guarantees that a controller's cleanup runs before an
// object it manages is removed.
//
// A finalizer is a domain-qualified name ("example.com/cleanup") in an
// object's finalizer list. Deleting an object that has finalizers only marks
// it Terminating; the store removes it when the list is empty. A controller
// that puts its finalizer on every object it manages therefore always gets to
// clean up, even if it was down when deletion was requested.
//
// # The four states
//
// With respect to one finalizer, an object is in one of four states
// ([StageOf]), and [Ensure] does what each calls for:
//
//	finalizer  Terminating  state       Ensure
//	absent     no           Absent      add it and persist, then apply
//	present    no           Present     apply (normal reconciliation)
//	present    yes          Finalizing  cleanup; on success remove it
//	absent     yes          Finalized   nothing: already cleaned up
//
// # Persistence and conflicts
//
// Ensure persists its own finalizer changes (leaving the write to the caller
// is a common source of objects stuck in Terminating). Every write is
// conditional on the state last read. [Add] and [Remove] resolve a conflict by
// reading the object again and recomputing the list from the fresh state, up
// to [MaxAttempts] writes; Remove takes out its own name only, so it never
// drops or restores another controller's finalizer. A conflict that outlasts
// the attempts is returned and the caller requeues.
//
// # Failed cleanup
//
// When cleanup fails, Ensure returns a [*CleanupError] (matching [ErrCleanup]
// and the cause) and leaves the finalizer in place: the object stays
// Terminating and the caller retries, typically with backoff, until cleanup
// succeeds. The helper has no place of its own to record the failure (an
// object's status belongs to its controller), so the controller records the
// error in the status it writes, and a stuck Terminating object shows why.
// Cleanup must be idempotent: it runs again after every failure.
//
// # Objects
//
// The helper works on any [Guarded]: four methods that read the Terminating flag
// and finalizer list, write the list conditionally, and read the object again.
// [Document] adapts a document of a tend store; a Kubernetes object is
// adapted the same way over its deletionTimestamp, finalizers and
// resourceVersion. Finalizer names are checked with [store.ValidateFinalizer].
package finalizer
