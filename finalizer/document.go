package finalizer

import (
	"context"
	"slices"

	"github.com/tendhq/tend/store"
)

// ReadWriter is the part of a store a [Document] uses: Get to read the
// document again and UpdateSpec to write its finalizers. Reads must be from
// the store itself, not from a cache that may lag behind, or a conflicting
// write would be retried against the same stale state.
type ReadWriter interface {
	store.Reader
	store.Writer
}

// Document is an [Guarded] over a document of a tend store. It holds the
// document as last read or written; [Document.Document] returns it.
//
// A Document is not safe for concurrent use.
type Document struct {
	rw  ReadWriter
	doc store.Document
}

var _ Guarded = (*Document)(nil)

// NewDocument returns an Object over doc, a document read from rw.
func NewDocument(rw ReadWriter, doc store.Document) *Document {
	return &Document{rw: rw, doc: doc}
}

// Document returns the document as last read or written. After the last
// finalizer of a Terminating document was removed, it is the document's final
// state: the store no longer holds it.
func (d *Document) Document() store.Document { return d.doc }

// Terminating reports whether deletion of the document was requested.
func (d *Document) Terminating() bool { return d.doc.Meta.Terminating() }

// Finalizers returns the document's finalizers.
func (d *Document) Finalizers() []string { return d.doc.Meta.Finalizers }

// SetFinalizers writes the document's finalizer list with
// [store.Writer.UpdateSpec], conditional on the revision last read. Spec,
// labels and owners are written back as read, so nothing else changes.
func (d *Document) SetFinalizers(ctx context.Context, finalizers []string) error {
	next := d.doc
	next.Meta.Finalizers = slices.Clone(finalizers)
	stored, err := d.rw.UpdateSpec(ctx, next)
	if err != nil {
		return err
	}
	d.doc = stored
	return nil
}

// Refresh reads the document again. A document stored under the same key with
// another UID is a different document: Refresh then fails with an error
// matching [store.ErrNotFound] and keeps the old state.
func (d *Document) Refresh(ctx context.Context) error {
	m := d.doc.Meta
	doc, err := d.rw.Get(ctx, m.Kind, m.Key)
	if err != nil {
		return err
	}
	if doc.Meta.UID != m.UID {
		return &store.Error{Op: "get", Kind: m.Kind, Key: m.Key, Err: store.ErrNotFound}
	}
	d.doc = doc
	return nil
}
