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
// # Retention: the story first
//
// A history keeps at most [RecorderConfig.MaxEntries] entries (default
// [DefaultMaxEntries]) and none older than [RecorderConfig.MaxAge] (default
// [DefaultMaxAge]): each write drops the entries past the age, then, beyond
// the count, the oldest routine entries ([Entry.Routine]: step starts and
// step ends that did not fail), then the oldest. Transitions, failures,
// refusals, requests, timers and operator actions so outlive polls. Polls
// of one step that end alike, one after the other, collapse into one
// start and one end whose [Entry.Count] counts them, from [Entry.First] to
// [Entry.Time]. Each text field of an entry is cut to [MaxFieldLen] bytes,
// so a history document stays well below the size limits of etcd and the
// Kubernetes API.
//
// # Writing loses nothing while the store is up
//
// Every entry carries an [Entry.ID], and a write adds no entry whose id the
// history holds, or held lately (the ids of the last 256 entries it let
// go): an entry written again, after a write that was stored but reported
// failed, is kept once. The outcome of an operator command carries the id
// [OutcomeID] whichever replica records it, its issuing [IssuedID]. A
// write that conflicts with another writer's is tried again with jittered
// backoff (from 5 ms, doubling up to a second) for as long as its context
// lasts.
//
// A [Recorder] takes entries into a bounded buffer and returns at once, so
// writing never holds up a reconcile; [Recorder.Run] writes them, batched
// per document, one write per document per [RecorderConfig.FlushInterval].
// The entries of a write that failed wait in the buffer for the next. An
// entry is dropped only when the buffer is full (routine entries first),
// when the store refuses it for good (an unknown kind), or when it is still
// unwritten as Run returns; each drop is counted in
// tend_history_entries_dropped_total, by reason, and logged, once per
// flush. A store that fails costs history, never progress.
//
// # Reading
//
// A [Reader] returns the entries of one document. The controller package
// serves them over HTTP (manager.HandlerConfig.History), and fills each
// entry's ReconcileID and TraceID so that an entry joins the reconcile's log
// lines (field reconcileID) and its span (attribute tend.reconcile.id).
package history
