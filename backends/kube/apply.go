package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tendhq/tend/store"
)

// Apply creates or updates the object obj describes with server-side apply
// under the client's field manager, and returns the object as the API
// server stored it.
//
// obj is an *unstructured.Unstructured (any kind, custom resources
// included) or a typed object of client-go's scheme (*appsv1.Deployment,
// *corev1.Service…), whose apiVersion and kind are filled in from the scheme
// when they are empty. It says what the field manager wants and nothing
// more: its labels, annotations, owner references, finalizers and every
// field but metadata and status. The metadata the server sets
// (resourceVersion, uid, managedFields, creationTimestamp…) and the status
// are left out of the request, so an object read from the server can be
// applied back. A typed object is applied as its JSON encoding, so a field
// it cannot omit (a bool, an int without omitempty) is applied at its zero
// value; build typed objects with only the fields you mean to own, or use
// unstructured ones.
//
// Fields the field manager applied before and leaves out now are removed;
// fields of other managers are kept. A field another manager owns and obj
// sets to another value fails the whole request with [ErrFieldConflict]
// unless [ClientConfig.Force] is set. The request is one write: it applies
// every field of obj or none. An object in a Terminating namespace fails
// with [ErrNamespaceTerminating], one in a missing namespace with
// [store.ErrNotFound]. Applying to a Terminating object succeeds, as it does
// in Kubernetes: check [Terminating] on the result.
func (c *Client) Apply(ctx context.Context, obj runtime.Object) (*unstructured.Unstructured, error) {
	u, err := applied(obj)
	if err != nil {
		return nil, fmt.Errorf("kube: apply %T: %w: %w", obj, store.ErrInvalid, err)
	}
	ref := RefOf(u)
	t, err := c.resolve(ctx, "apply", ref, true)
	if err != nil {
		return nil, err
	}
	out, err := t.res.Apply(ctx, ref.Name, u, metav1.ApplyOptions{FieldManager: c.cfg.FieldManager, Force: c.cfg.Force})
	if err != nil {
		return nil, c.fail("apply", ref, t.gvr, err)
	}
	return out, nil
}

// applied returns the apply request of obj: a copy, with apiVersion and kind
// set and without the metadata the server owns or the status.
func applied(obj runtime.Object) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, fmt.Errorf("no object")
	}
	var u *unstructured.Unstructured
	if in, ok := obj.(*unstructured.Unstructured); ok {
		u = in.DeepCopy()
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		u = &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			gvks, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil {
				return nil, fmt.Errorf("set its apiVersion and kind: %w", err)
			}
			u.SetGroupVersionKind(gvks[0])
		}
	}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("apiVersion and kind are required")
	}
	delete(u.Object, "status")
	md, _ := u.Object["metadata"].(map[string]any)
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		delete(md, f)
	}
	return u, nil
}

// SetOwner records owner as an owner of obj, so that Kubernetes' garbage
// collector deletes obj once owner is gone, and foreground deletion of owner
// waits for obj (BlockOwnerDeletion). With controller set, owner becomes
// obj's managing controller. owner is an object read from the API server
// (the result of [Client.Apply] or [Client.Get]): its apiVersion, kind, name
// and uid are required. A reference to the same owner is replaced.
//
// It fails with an error matching [store.ErrInvalid] when owner lacks one of
// those, when owner is namespaced and obj is in another namespace (the
// collector would ignore the reference), and when controller is set and obj
// already has another controller.
func SetOwner(obj metav1.Object, owner *unstructured.Unstructured, controller bool) error {
	ref := RefOf(owner)
	switch {
	case ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" || owner.GetUID() == "":
		return fmt.Errorf("kube: owner %v of %s: %w: apiVersion, kind, name and uid are required (use the object as the API server returned it)",
			ref, obj.GetName(), store.ErrInvalid)
	case ref.Namespace != "" && ref.Namespace != obj.GetNamespace():
		return fmt.Errorf("kube: owner %v of %s/%s: %w: a namespaced owner must be in its dependent's namespace",
			ref, obj.GetNamespace(), obj.GetName(), store.ErrInvalid)
	}
	refs := obj.GetOwnerReferences()
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	for _, r := range refs {
		if r.UID == owner.GetUID() {
			continue
		}
		if controller && r.Controller != nil && *r.Controller {
			return fmt.Errorf("kube: owner %v of %s: %w: already controlled by %s %s", ref, obj.GetName(), store.ErrInvalid, r.Kind, r.Name)
		}
		out = append(out, r)
	}
	obj.SetOwnerReferences(append(out, metav1.OwnerReference{
		APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: owner.GetUID(),
		Controller: ptr(controller), BlockOwnerDeletion: ptr(true),
	}))
	return nil
}
