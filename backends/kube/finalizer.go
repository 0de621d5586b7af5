package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tendhq/tend/store"
)

// FinalizerObject is a [finalizer.Guarded] over a Kubernetes object of any
// kind, so that [finalizer.Ensure] guards it: Terminating is its
// deletionTimestamp, Finalizers its metadata.finalizers, and SetFinalizers
// writes the whole list with a JSON merge patch whose resourceVersion and
// uid the API server checks, so a write based on a stale read fails with
// [store.ErrConflict] and a write to an object that is gone, or was replaced
// under its name, with [store.ErrNotFound]. It holds the object as last read
// or written; [FinalizerObject.Object] returns it.
//
// A FinalizerObject is not safe for concurrent use.
type FinalizerObject struct {
	c   *Client
	obj *unstructured.Unstructured
}

// NewFinalizerObject returns a finalizer.Guarded over obj, an object read
// from the API server through c (its apiVersion, kind, name, uid and
// resourceVersion are used).
func NewFinalizerObject(c *Client, obj *unstructured.Unstructured) *FinalizerObject {
	return &FinalizerObject{c: c, obj: obj}
}

// Object returns the object as last read or written. After the last
// finalizer of a Terminating object was removed, it is the object's final
// state: the API server no longer holds it.
func (o *FinalizerObject) Object() *unstructured.Unstructured { return o.obj }

// Terminating reports whether deletion of the object was requested.
func (o *FinalizerObject) Terminating() bool { return Terminating(o.obj) }

// Finalizers returns the object's finalizers.
func (o *FinalizerObject) Finalizers() []string { return o.obj.GetFinalizers() }

// SetFinalizers writes finalizers as the object's whole finalizer list,
// conditional on the resourceVersion and uid last read. Nothing else of
// the object changes.
func (o *FinalizerObject) SetFinalizers(ctx context.Context, finalizers []string) error {
	const op = "set finalizers"
	ref := RefOf(o.obj)
	t, err := o.c.resolve(ctx, op, ref, true)
	if err != nil {
		return err
	}
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      slices.Clone(finalizers),
		"resourceVersion": o.obj.GetResourceVersion(),
		"uid":             o.obj.GetUID(),
	}})
	if err != nil {
		return err
	}
	out, err := t.res.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: o.c.cfg.FieldManager})
	if err != nil {
		return o.c.fail(op, ref, t.gvr, err)
	}
	o.obj = out
	return nil
}

// Refresh reads the object again. An object under the same name with
// another uid is a different object: Refresh then fails with an error
// matching [store.ErrNotFound] and keeps the old state.
func (o *FinalizerObject) Refresh(ctx context.Context) error {
	ref := RefOf(o.obj)
	u, err := o.c.Get(ctx, ref)
	if err != nil {
		return err
	}
	if u.GetUID() != o.obj.GetUID() {
		return fmt.Errorf("kube: get %v: %w: uid %s was replaced by %s", ref, store.ErrNotFound, o.obj.GetUID(), u.GetUID())
	}
	o.obj = u
	return nil
}
