// Package history keeps, for each document, a bounded record of what its
// controller did and why: every phase transition, step attempt, refusal,
// operation given up, drift repair, request served and timer fired. It
// answers the operator's question "why is this object in this phase".
//
// # Where history lives
//
// The history of a document of kind K and key k is itself a document, of
// kind [KindFor](K) ("ApiGatewayHistory") and key k, in the same store: every
// replica and every tool that reads the store sees it, and it survives
// restarts. Its Spec holds the entries as JSON, oldest first. It carries an
// owner reference to the document (kind, key and UID), so the cascade
// garbage collector (cascade.NewController), when it watches the history
// kinds, removes it once the document is gone; a document deleted and
// created again under the same key starts a new history. The backend must be configured with the history
// kinds: see [Kinds].
//
// # Retention
//
// A history keeps at most [RecorderConfig.MaxEntries] entries (default
// [DefaultMaxEntries]) and none older than [RecorderConfig.MaxAge] (default
// [DefaultMaxAge]): each write drops the entries past the age, then the
// oldest beyond the count. Each text field of an entry is cut to
// [MaxFieldLen] bytes, so a history document stays well below the size
// limits of etcd and the Kubernetes API.
//
// # Writing never holds up a reconcile
//
// A [Recorder] takes entries into a bounded buffer and returns at once;
// [Recorder.Run] writes them, batched per document, one write per document
// per [RecorderConfig.FlushInterval]. An entry that finds the buffer full,
// or whose write fails (after retries on conflicts), is dropped and counted
// in tend_history_entries_dropped_total, by reason; history is best effort,
// and a store that fails costs history, never progress.
//
// # Reading
//
// A [Reader] returns the entries of one document. The controller package
// serves them over HTTP (manager.HandlerConfig.History), and fills each
// entry's ReconcileID and TraceID so that an entry joins the reconcile's log
// lines (field reconcileID) and its span (attribute tend.reconcile.id).
package history
