package store

import (
	"context"
	"time"
)

// Meta is the structured part of a document that backends understand.
type Meta struct {
	// Kind names the document type, for example "ApiGateway". See [ValidateKind].
	Kind string `json:"kind"`
	// Key identifies the document within its kind, for example "team-a/gw-1".
	// See [ValidateKey].
	Key string `json:"key"`
	// UID is assigned by the backend on Create and never reused, so a document
	// deleted and created again under the same key is a different document.
	UID string `json:"uid,omitempty"`
	// Revision is the backend revision of the document's last write. Writes use
	// it as their precondition. Zero on a document that was never stored.
	Revision int64 `json:"revision,omitempty"`
	// Generation starts at 1 and grows by one each time the Spec bytes change.
	// Status and metadata writes leave it alone, so a controller can tell whether
	// it has acted on the newest intent.
	Generation int64 `json:"generation,omitempty"`
	// CreatedAt and UpdatedAt are set by the backend.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// DeletionRequestedAt is set by Delete on a document that still has
	// finalizers; the document is Terminating until they are all removed.
	DeletionRequestedAt time.Time `json:"deletionRequestedAt,omitzero"`
	// Finalizers name the cleanups that must finish before the document can be
	// removed. Each is domain-qualified. See [ValidateFinalizer].
	Finalizers []string `json:"finalizers,omitempty"`
	// Owners are the documents this one depends on. See package cascade.
	Owners []OwnerRef `json:"owners,omitempty"`
	// Labels are indexed for [ListOptions.Selector]. See [ValidateLabels].
	Labels map[string]string `json:"labels,omitempty"`
}

// Terminating reports whether deletion of the document was requested.
func (m *Meta) Terminating() bool { return !m.DeletionRequestedAt.IsZero() }

// HasFinalizer reports whether name is among the document's finalizers.
func (m *Meta) HasFinalizer(name string) bool {
	for _, f := range m.Finalizers {
		if f == name {
			return true
		}
	}
	return false
}

// OwnerRef points from a dependent document to its owner.
type OwnerRef struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	UID  string `json:"uid"`
	// Controller marks the one owner that manages this dependent.
	Controller bool `json:"controller,omitempty"`
	// BlockOwnerDeletion keeps a foreground-deleted owner until this dependent
	// is gone.
	BlockOwnerDeletion bool `json:"blockOwnerDeletion,omitempty"`
}

// Document is what backends store: structured metadata and encoded payloads.
// Backends return copies; changing a returned document never changes the
// store. A document returned by a write may share parts with the one given
// to it: see [Writer].
type Document struct {
	Meta   Meta
	Spec   []byte
	Status []byte
}

// ListOptions narrows a List. The zero value lists every document of the
// kind in one result.
type ListOptions struct {
	// Selector keeps documents whose labels match. See [ParseSelector].
	Selector Selector
	// OwnerUID, when set, keeps documents with an owner reference to that UID.
	OwnerUID string
	// Limit, when positive, asks for a page: at most Limit documents, and a
	// [ListResult.Continue] token when more may follow. Zero lists every
	// matching document; a negative Limit is an error matching [ErrInvalid].
	Limit int
	// Continue, when set, asks for the page after the one whose
	// [ListResult.Continue] it is. The other options must be the same as
	// for the first page. A token that no List of this backend returned
	// fails with [ErrInvalidContinue]. See [Reader.List] for what pages
	// promise.
	Continue string
}

// ListResult is a consistent snapshot of a kind, or one page of a list.
type ListResult struct {
	Items []Document
	// Revision is the backend revision the list was read at. Watch from it to
	// receive every change made after the snapshot. Every page of a paged
	// list reports the revision of its first page.
	Revision int64
	// Continue is empty when the list is complete. Otherwise more documents
	// may follow: pass it as [ListOptions.Continue] to read the next page.
	// It is opaque: only the backend that returned it reads it.
	Continue string
}

// DeleteOptions are the preconditions of a Delete. The zero value deletes
// whatever is stored under the key.
type DeleteOptions struct {
	// Revision, when non-zero, must equal the stored revision.
	Revision int64
	// UID, when set, must equal the stored UID.
	UID string
}

// EventType says what happened to a document.
type EventType int

// The event types, in the order a document's life produces them.
const (
	Added EventType = iota + 1
	Modified
	Deleted
)

// String returns "Added", "Modified" or "Deleted".
func (t EventType) String() string {
	switch t {
	case Added:
		return "Added"
	case Modified:
		return "Modified"
	case Deleted:
		return "Deleted"
	}
	return "EventType(" + itoa(int64(t)) + ")"
}

// Event is one change delivered by a [Watch].
type Event struct {
	Type EventType
	// Revision is the revision of the change. For Added and Modified it equals
	// Document.Meta.Revision; for Deleted it is the revision of the removal and
	// Document is the document's last state (a backend may report the state
	// stored before a removal made by UpdateSpec, with its last finalizer
	// still listed).
	Revision int64
	// Document is the document as the change left it. It may share memory
	// with the backend's own copy (the in-memory backend hands every watch
	// the same immutable document): read it, and Clone it before changing
	// any part of it.
	Document Document
}

// Watch is a stream of changes to one kind, in revision order, each exactly once.
type Watch interface {
	// Next blocks until the next event, ctx is done (ctx.Err() is returned and
	// the watch stays usable) or the watch fails. After a failure every call
	// returns the same error: [ErrCompacted] when history the watch still needs
	// is gone (relist), [ErrWatchLagged] when the consumer fell too far behind
	// (watch again from the last revision received), or [ErrClosed].
	Next(ctx context.Context) (Event, error)
	// Close releases the watch. It is safe to call more than once.
	Close() error
}

// Reader reads documents.
type Reader interface {
	// Get returns the stored document or an error matching [ErrNotFound].
	Get(ctx context.Context, kind, key string) (Document, error)
	// List returns the documents of kind matching opts, ordered by key, and the
	// revision they were read at.
	//
	// With [ListOptions.Limit] set it returns one page: at most Limit
	// documents, ordered by key, all after those of the pages before, and a
	// Continue token when more may follow (a page may hold fewer than
	// Limit documents, even none, and still be followed by another). Read
	// until Continue is empty, and the pages together hold every matching
	// document exactly once when nothing was written in between. When
	// writes happen between pages, a document that none of them changed
	// still appears exactly once, in key order; a document created,
	// changed or removed meanwhile appears at most once, in one of its
	// states. Backends that read every page at the first page's revision
	// (etcd, Kubernetes) return exactly that snapshot; they fail with
	// [ErrCompacted] once that revision's history is gone, and the caller
	// lists again from the first page. Each backend documents which it does.
	// Every page reports the first page's revision, so a watch from it
	// after the last page misses no change made since the list began.
	List(ctx context.Context, kind string, opts ListOptions) (ListResult, error)
}

// Writer changes documents. Every method validates its input and fails with an
// error matching [ErrInvalid] before writing anything. Each write is atomic: it
// happens whole or not at all.
//
// An update that would change nothing (the same Spec bytes, labels,
// finalizers and owners for UpdateSpec; the same Status bytes for
// UpdateStatus) is not a change: once its precondition holds, it returns the
// stored document with its revision unchanged and no watch sees an event. A
// controller that rewrites an unchanged status therefore does not wake itself
// up again.
//
// The document a write returns shares no memory with the store. It may share
// memory with the document given to the write: each of Spec, Status,
// Finalizers, Owners and Labels that equals the given one's may be the given
// one's own (see [Document.CloneReusing]), so a write whose result equals
// what the caller holds copies nothing. A caller that keeps both documents
// and changes one in place copies it first.
type Writer interface {
	// Create stores a new document and returns it as stored, with UID,
	// Revision, Generation 1 and times set. doc.Meta.Revision must be zero and
	// doc.Status empty (status belongs to the controller). A document already
	// stored under the key (even Terminating) fails with [ErrAlreadyExists].
	Create(ctx context.Context, doc Document) (Document, error)
	// UpdateSpec writes doc's Spec, Labels, Finalizers and Owners if the stored
	// revision equals doc.Meta.Revision (else [ErrConflict]). Generation grows
	// when the Spec bytes change. Adding a finalizer to a Terminating document
	// fails with [ErrInvalid]; removing the last finalizer of a Terminating
	// document removes it, and the returned document is its last state.
	UpdateSpec(ctx context.Context, doc Document) (Document, error)
	// UpdateStatus writes doc.Status alone if the stored revision equals
	// doc.Meta.Revision (else [ErrConflict]). Spec, metadata and Generation are
	// unchanged.
	UpdateStatus(ctx context.Context, doc Document) (Document, error)
	// Delete removes the document, or, if it has finalizers, records the time
	// deletion was requested and leaves removal to the last finalizer's owner.
	// Deleting a Terminating document again changes nothing. Failed
	// preconditions return [ErrConflict]; a missing document [ErrNotFound].
	Delete(ctx context.Context, kind, key string, opts DeleteOptions) error
}

// Watcher streams changes.
type Watcher interface {
	// Watch returns every change to kind with a revision greater than
	// fromRevision, typically the revision of a List. If the backend no longer
	// holds the history after fromRevision, it fails with [ErrCompacted] (now or
	// from Watch.Next) and the caller lists again.
	//
	// A fromRevision the backend has not reached yet is not an error: the
	// watch starts, Next waits, and once the backend passes fromRevision the
	// watch delivers the changes after it and none of those up to it. A
	// revision read through another replica or connection of the same store
	// can be ahead of the one serving the watch for a while; waiting for it
	// neither loses nor repeats a change, where an error would leave the
	// caller to choose between retrying and listing again. etcd and the
	// Kubernetes API answer such a watch the same way. A revision of another
	// store is not detected: its watch waits until this one catches up.
	Watch(ctx context.Context, kind string, fromRevision int64) (Watch, error)
}

// Lease is a named, time-limited claim held by one holder.
type Lease struct {
	Name   string
	Holder string
	// Fence grows each time the lease passes to a new holder (renewals keep
	// it). Writes can be fenced with it: see [WithFence].
	Fence int64
	// TTL is the time to live granted by the last acquire or renew.
	TTL time.Duration
	// Expires is when the lease lapses unless renewed, by the backend's clock.
	Expires time.Time
}

// Leaser hands out leases. Expiry is judged by the backend's clock.
type Leaser interface {
	// AcquireLease takes the named lease for holder for ttl. If another holder
	// has it and it has not expired, it fails with [ErrLeaseHeld]. If holder
	// already has it, it is renewed.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// RenewLease extends l by its TTL. It fails with [ErrLeaseLost] if the lease
	// expired and was taken, or was released, since l was issued.
	RenewLease(ctx context.Context, l Lease) (Lease, error)
	// ReleaseLease gives l up at once so another holder can take it. Releasing a
	// lease no longer held is not an error.
	ReleaseLease(ctx context.Context, l Lease) error
	// ListLeases returns the unexpired leases whose names start with prefix,
	// ordered by name.
	ListLeases(ctx context.Context, prefix string) ([]Lease, error)
}

// Backend is the full contract of a tend store. Package storetest checks it.
type Backend interface {
	Reader
	Writer
	Watcher
	Leaser
	// Kinds lists the kinds the backend was configured with. Every call naming
	// another kind fails with [ErrUnknownKind].
	Kinds() []string
}
