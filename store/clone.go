package store

import (
	"bytes"
	"maps"
	"slices"
)

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
