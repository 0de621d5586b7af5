package kube

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tendhq/tend/store"
)

// DeleteOptions are the options of [Client.Delete]. The zero value deletes
// whatever object has the name, in the background.
type DeleteOptions struct {
	// Propagation says what happens to the object's dependents (the objects
	// whose owner references name it): metav1.DeletePropagationBackground
	// (the default) removes the object at once and lets the garbage
	// collector delete them afterwards; metav1.DeletePropagationForeground
	// keeps the object Terminating until the collector has deleted every
	// dependent that blocks its owner's deletion; metav1.DeletePropagationOrphan
	// leaves them.
	Propagation metav1.DeletionPropagation
	// UID, when set, deletes the object only if it is still the one with
	// that UID: an object created anew under the same name is left alone.
	UID types.UID
}

// Delete requests the deletion of the object ref names and returns what
// remains of it: nil once it is gone, or the object, Terminating, while
// finalizers or foreground propagation keep it. Deleting an object that is
// gone, or already Terminating, succeeds; so Delete can be called again and
// again until it returns nil. An object of another UID than opts.UID is left
// alone and reported gone.
func (c *Client) Delete(ctx context.Context, ref Ref, opts DeleteOptions) (*unstructured.Unstructured, error) {
	t, err := c.resolve(ctx, "delete", ref, true)
	if err != nil {
		return nil, err
	}
	prop := opts.Propagation
	if prop == "" {
		prop = metav1.DeletePropagationBackground
	}
	del := metav1.DeleteOptions{PropagationPolicy: &prop}
	if opts.UID != "" {
		del.Preconditions = &metav1.Preconditions{UID: &opts.UID}
	}
	err = t.res.Delete(ctx, ref.Name, del)
	if err = c.gone("delete", t, opts.UID, err); err != nil {
		return nil, err
	}
	// The API server's answer to a delete does not say whether the object
	// went: read it.
	u, err := t.res.Get(ctx, ref.Name, metav1.GetOptions{})
	if err = c.gone("delete", t, opts.UID, err); err != nil || u == nil || (opts.UID != "" && u.GetUID() != opts.UID) {
		return nil, err
	}
	return u, nil
}

// gone returns nil for a request that succeeded or found no object to act
// on (gone, or replaced by another UID than uid), and the failure otherwise.
func (c *Client) gone(op string, t target, uid types.UID, err error) error {
	if err == nil {
		return nil
	}
	err = c.fail(op, t.ref, t.gvr, err)
	if errors.Is(err, store.ErrNotFound) || (uid != "" && errors.Is(err, store.ErrConflict)) {
		return nil
	}
	return err
}
