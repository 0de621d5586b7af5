package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/tendhq/tend/store"
)

// The errors every backend returns for the same failures, worded once. Each
// is a [*store.Error] naming the operation and the document, whose cause
// matches the store sentinel for the failure.

// RevisionConflict is the error of a write whose revision precondition want
// is not the stored revision: it matches [store.ErrConflict].
func RevisionConflict(op, kind, key string, want, stored int64) error {
	return &store.Error{Op: op, Kind: kind, Key: key,
		Err: fmt.Errorf("%w: revision %d is not the stored %d", store.ErrConflict, want, stored)}
}

// CheckDelete checks the preconditions of a Delete against stored, the
// metadata of the document stored under the key: it returns nil when they
// hold, else an error matching [store.ErrConflict] that names the document.
func CheckDelete(stored store.Meta, opts store.DeleteOptions) error {
	switch {
	case opts.Revision != 0 && opts.Revision != stored.Revision:
		return RevisionConflict("delete", stored.Kind, stored.Key, opts.Revision, stored.Revision)
	case opts.UID != "" && opts.UID != stored.UID:
		return &store.Error{Op: "delete", Kind: stored.Kind, Key: stored.Key,
			Err: fmt.Errorf("%w: UID %q is not the stored %q", store.ErrConflict, opts.UID, stored.UID)}
	}
	return nil
}

// CheckWatch checks the revision a watch of kind starts from: a negative
// one is an error matching [store.ErrInvalid].
func CheckWatch(kind string, fromRevision int64) error {
	if fromRevision < 0 {
		return &store.Error{Op: "watch", Kind: kind, Err: fmt.Errorf("%w: negative revision %d", store.ErrInvalid, fromRevision)}
	}
	return nil
}

// Compacted is the error of a watch of kind from revision from whose
// history is discarded up to revision compacted: it matches
// [store.ErrCompacted].
func Compacted(kind string, from, compacted int64) error {
	return &store.Error{Op: "watch", Kind: kind,
		Err: fmt.Errorf("%w: changes after revision %d are discarded up to revision %d", store.ErrCompacted, from, compacted)}
}

// CheckCompact checks the revision given to [Compactor.Compact] against the
// backend's current one: a revision outside 0..current is an error matching
// [store.ErrInvalid].
func CheckCompact(revision, current int64) error {
	if revision < 0 || revision > current {
		return &store.Error{Op: "compact", Err: fmt.Errorf("%w: revision %d is outside 0..%d", store.ErrInvalid, revision, current)}
	}
	return nil
}

// Fenced is the error of a write refused because the lease of its fence f
// is no longer held at f's token: it matches [store.ErrFenced].
func Fenced(op, kind, key string, f store.Fence) error {
	return &store.Error{Op: op, Kind: kind, Key: key,
		Err: fmt.Errorf("%w: lease %q is no longer held at token %d", store.ErrFenced, f.Lease, f.Token)}
}

// RefuseFence is how a backend that cannot check a fence atomically with a
// write (an [Unfenced] backend) refuses one: when ctx carries a fence
// ([store.WithFence]) it returns an error matching cause, the backend's
// [Unfenced.FencingUnsupported], and the write must not happen; otherwise
// nil.
func RefuseFence(ctx context.Context, op, kind, key string, cause error) error {
	if f, ok := store.FenceFrom(ctx); ok {
		return &store.Error{Op: op, Kind: kind, Key: key,
			Err: fmt.Errorf("%w (fence of lease %q at %d)", cause, f.Lease, f.Token)}
	}
	return nil
}

// UnknownKind is the error of a request naming kind, which the backend was
// not configured with; known are the kinds it was. For a malformed kind
// the cause is [store.ValidateKind]'s error (matching [store.ErrInvalid]),
// else it matches [store.ErrUnknownKind].
func UnknownKind(op, kind, key string, known []string) error {
	err := store.ValidateKind(kind)
	if err == nil {
		err = fmt.Errorf("%w: the store holds %s", store.ErrUnknownKind, strings.Join(known, ", "))
	}
	return &store.Error{Op: op, Kind: kind, Key: key, Err: err}
}
