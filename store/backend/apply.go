package backend

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/tendhq/tend/store"
)

// The rules of the write methods, written once for every backend. Each backend
// reads the stored document, checks the revision precondition, then asks these
// functions what the write does, and performs it atomically.

// ValidateCreate checks a document given to [store.Writer.Create]: its revision is
// zero, it has no status (status belongs to the controller), and its metadata
// is valid. The error matches [store.ErrInvalid].
func ValidateCreate(doc store.Document) error {
	switch {
	case doc.Meta.Revision != 0:
		return fmt.Errorf("%w: revision %d: a new document has revision 0", store.ErrInvalid, doc.Meta.Revision)
	case len(doc.Status) != 0:
		return fmt.Errorf("%w: status is written by UpdateStatus only", store.ErrInvalid)
	}
	return ValidateMeta(&doc.Meta)
}

// SpecUpdate is what an UpdateSpec does to a stored document. See [ApplySpec].
type SpecUpdate struct {
	// Next is the document to store: the stored one with the update's spec,
	// labels, owners and finalizers, and its generation grown if the spec
	// bytes changed. Revision and UpdatedAt are left for the backend to set.
	// When Remove is set, Next is the document's last state.
	Next store.Document
	// Changed is false when the update changes nothing: the backend returns
	// the stored document as it is, without a write or a watch event.
	Changed bool
	// Remove is set when the update removed the last finalizer of a
	// Terminating document: the backend removes it (a Deleted event).
	Remove bool
}

// ApplySpec applies update, given to [store.Writer.UpdateSpec], to cur, the stored
// document whose revision matched the update's precondition. It refuses,
// with an error matching [store.ErrInvalid], a finalizer added to a Terminating
// document. Next shares no memory with update; it shares unchanged parts with
// cur.
func ApplySpec(cur, update store.Document) (SpecUpdate, error) {
	m := &update.Meta
	if cur.Meta.Terminating() {
		for _, f := range m.Finalizers {
			if !cur.Meta.HasFinalizer(f) {
				return SpecUpdate{}, fmt.Errorf("%w: cannot add finalizer %q: deletion was requested", store.ErrInvalid, f)
			}
		}
	}
	next := cur
	specChanged := !bytes.Equal(cur.Spec, update.Spec)
	if specChanged {
		next.Spec = cloneBytes(update.Spec)
		next.Meta.Generation++
	}
	changed := specChanged
	if !maps.Equal(cur.Meta.Labels, m.Labels) {
		next.Meta.Labels, changed = cloneMap(m.Labels), true
	}
	if !slices.Equal(cur.Meta.Owners, m.Owners) {
		next.Meta.Owners, changed = cloneSlice(m.Owners), true
	}
	if !slices.Equal(cur.Meta.Finalizers, m.Finalizers) {
		next.Meta.Finalizers, changed = cloneSlice(m.Finalizers), true
	}
	if !changed {
		return SpecUpdate{Next: cur}, nil
	}
	return SpecUpdate{
		Next:    next,
		Changed: true,
		Remove:  next.Meta.Terminating() && len(next.Meta.Finalizers) == 0,
	}, nil
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

func cloneSlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
