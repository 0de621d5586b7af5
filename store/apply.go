package store

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// The rules of the write methods, written once for every backend. Each backend
// reads the stored document, checks the revision precondition, then asks these
// functions what the write does, and performs it atomically.

// ValidateCreate checks a document given to [Writer.Create]: its revision is
// zero, it has no status (status belongs to the controller), and its metadata
// is valid. The error matches [ErrInvalid].
func ValidateCreate(doc Document) error {
	switch {
	case doc.Meta.Revision != 0:
		return fmt.Errorf("%w: revision %d: a new document has revision 0", ErrInvalid, doc.Meta.Revision)
	case len(doc.Status) != 0:
		return fmt.Errorf("%w: status is written by UpdateStatus only", ErrInvalid)
	}
	return ValidateMeta(&doc.Meta)
}

// SpecUpdate is what an UpdateSpec does to a stored document. See [ApplySpec].
type SpecUpdate struct {
	// Next is the document to store: the stored one with the update's spec,
	// labels, owners and finalizers, and its generation grown if the spec
	// bytes changed. Revision and UpdatedAt are left for the backend to set.
	// When Remove is set, Next is the document's last state.
	Next Document
	// Changed is false when the update changes nothing: the backend returns
	// the stored document as it is, without a write or a watch event.
	Changed bool
	// Remove is set when the update removed the last finalizer of a
	// Terminating document: the backend removes it (a Deleted event).
	Remove bool
}

// ApplySpec applies update, given to [Writer.UpdateSpec], to cur, the stored
// document whose revision matched the update's precondition. It refuses,
// with an error matching [ErrInvalid], a finalizer added to a Terminating
// document. Next shares no memory with update; it shares unchanged parts with
// cur.
func ApplySpec(cur, update Document) (SpecUpdate, error) {
	m := &update.Meta
	if cur.Meta.Terminating() {
		for _, f := range m.Finalizers {
			if !cur.Meta.HasFinalizer(f) {
				return SpecUpdate{}, fmt.Errorf("%w: cannot add finalizer %q: deletion was requested", ErrInvalid, f)
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

// Clone returns a deep copy of m: changing the copy never changes m.
func (m Meta) Clone() Meta { return m.cloneReusing(Meta{}) }

// Clone returns a deep copy of d: changing the copy never changes d. Spec
// and Status share one allocation, each capped at its length, so appending
// to one never writes into the other.
func (d Document) Clone() Document { return d.CloneReusing(Document{}) }

// CloneReusing returns a copy of d for a caller that holds have, typically
// the document it gave to the write that produced d: each of Spec, Status,
// Finalizers, Owners and Labels that is not empty and equals have's is
// have's own, and the others are deep copies of d's. Changing the result
// never changes d; it may change have. This is how backends return written
// documents without copying what the caller already holds (see [Writer]).
func (d Document) CloneReusing(have Document) Document {
	c := Document{Meta: d.Meta.cloneReusing(have.Meta)}
	// The payloads not reused are copied into one allocation.
	var spec, status []byte
	if c.Spec = have.Spec; len(d.Spec) == 0 || !bytes.Equal(d.Spec, have.Spec) {
		c.Spec, spec = nil, d.Spec
	}
	if c.Status = have.Status; len(d.Status) == 0 || !bytes.Equal(d.Status, have.Status) {
		c.Status, status = nil, d.Status
	}
	if n := len(spec) + len(status); n > 0 {
		buf := make([]byte, n)
		copy(buf, spec)
		copy(buf[len(spec):], status)
		if len(spec) > 0 {
			c.Spec = buf[:len(spec):len(spec)]
		}
		if len(status) > 0 {
			c.Status = buf[len(spec):]
		}
	}
	return c
}

func (m Meta) cloneReusing(have Meta) Meta {
	m.Finalizers = reuseSlice(m.Finalizers, have.Finalizers)
	m.Owners = reuseSlice(m.Owners, have.Owners)
	switch {
	case len(m.Labels) == 0:
		m.Labels = nil
	case maps.Equal(m.Labels, have.Labels):
		m.Labels = have.Labels
	default:
		m.Labels = maps.Clone(m.Labels)
	}
	return m
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

// reuseSlice returns have if it equals s, else a copy of s; nil if s is
// empty.
func reuseSlice[T comparable](s, have []T) []T {
	switch {
	case len(s) == 0:
		return nil
	case slices.Equal(s, have):
		return have
	}
	return slices.Clone(s)
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
