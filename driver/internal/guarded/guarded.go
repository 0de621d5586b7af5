package guarded

import (
	"context"
	"slices"

	"github.com/tendhq/tend/driver/internal/echoes"
	"github.com/tendhq/tend/store"
)

// Object is a finalizer.Guarded over a typed document of a collection.
type Object[Spec, Status any] struct {
	c      *store.Collection[Spec, Status]
	obj    *store.Object[Spec, Status]
	echoes *echoes.Tracker // records the writes; may be nil
}

// New returns obj of collection c as a finalizer.Guarded. Its finalizer
// writes are recorded in own, unless own is nil.
func New[Spec, Status any](c *store.Collection[Spec, Status], obj *store.Object[Spec, Status], own *echoes.Tracker) *Object[Spec, Status] {
	return &Object[Spec, Status]{c: c, obj: obj, echoes: own}
}

// Object returns the document as last written or read.
func (f *Object[Spec, Status]) Object() *store.Object[Spec, Status] { return f.obj }

// Terminating reports whether the document's deletion was requested.
func (f *Object[Spec, Status]) Terminating() bool { return f.obj.Terminating() }

// Finalizers returns the document's finalizers.
func (f *Object[Spec, Status]) Finalizers() []string { return f.obj.Finalizers }

// SetFinalizers writes the document with finalizers, conditional on the
// revision read, and keeps the document written.
func (f *Object[Spec, Status]) SetFinalizers(ctx context.Context, finalizers []string) error {
	next := *f.obj
	next.Finalizers = slices.Clone(finalizers)
	var written *store.Object[Spec, Status]
	update := func() (rev int64, err error) {
		if written, err = f.c.UpdateSpec(ctx, &next); err == nil {
			rev = written.Revision
		}
		return rev, err
	}
	var err error
	if f.echoes != nil {
		err = f.echoes.Write(next.Key, update)
	} else {
		_, err = update()
	}
	if err != nil {
		return err
	}
	f.obj = written
	return nil
}

// Refresh reads the document again; one of another uid under its key is
// not found.
func (f *Object[Spec, Status]) Refresh(ctx context.Context) error {
	obj, err := f.c.Get(ctx, f.obj.Key)
	if err != nil {
		return err
	}
	if obj.UID != f.obj.UID {
		return &store.Error{Op: "get", Kind: f.c.Kind(), Key: f.obj.Key, Err: store.ErrNotFound}
	}
	f.obj = obj
	return nil
}
