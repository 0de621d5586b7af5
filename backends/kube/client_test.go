package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/internal/servertest"
	"github.com/tendhq/tend/store"
)

// fullCluster skips the test unless the test cluster runs the controllers
// (garbage collector, namespace and deployment controllers, the scheduler
// and kwok's nodes) besides the API server; under CI it fails instead.
// scripts/servers/kube.sh starts them and exports TEND_KUBE_AUDIT_LOG with
// them.
func fullCluster(t *testing.T) {
	t.Helper()
	restConfig(t)
	servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube")
}

// newClient returns a client of the test API server under field manager
// "tend-test" (or manager, when given).
func newClient(t *testing.T, manager ...string) *kube.Client {
	t.Helper()
	cfg := kube.ClientConfig{REST: restConfig(t), FieldManager: "tend-test"}
	if len(manager) > 0 {
		cfg.FieldManager = manager[0]
	}
	c, err := kube.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newNamespace applies a namespace of the test's own and deletes it after.
func newNamespace(t *testing.T, c *kube.Client) string {
	t.Helper()
	ns := fmt.Sprintf("tend-act-%d-%d", time.Now().UnixNano()%1e9, namespaces.Add(1))
	if _, err := c.Apply(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Delete(context.Background(), kube.Ref{APIVersion: "v1", Kind: "Namespace", Name: ns}, kube.DeleteOptions{})
	})
	return ns
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
}

// installWidgets installs the definition of the Widget custom resource in
// group at v1 with c and waits until the API server serves it.
func installWidgets(t *testing.T, c *kube.Client, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	def := kube.CustomResourceDefinition(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
	if err := c.InstallDefinitions(ctx, []*unstructured.Unstructured{def}, kube.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestApply: typed and unstructured objects of built-in and custom kinds are
// created and updated by server-side apply under the client's field
// manager, with owner references; applying the same object again changes
// nothing, and a field left out is removed.
//
// It runs on the quiet API server: on the cluster the deployment controller
// writes the Deployment's status between two applies, which moves its
// resourceVersion though the apply changed nothing.
func TestApply(t *testing.T) {
	c, err := kube.NewClient(kube.ClientConfig{REST: storeConfig(t), FieldManager: "tend-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := newNamespace(t, c)

	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:1"}}},
			},
		},
	}
	d, err := c.Apply(ctx, dep)
	if err != nil {
		t.Fatal(err)
	}
	if d.GetUID() == "" || d.GetKind() != "Deployment" || d.GetLabels()["app"] != "web" {
		t.Fatalf("applied Deployment: %v", d.Object)
	}
	if ms := d.GetManagedFields(); len(ms) != 1 || ms[0].Manager != "tend-test" || ms[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managed fields: %+v", ms)
	}
	if dep.APIVersion != "" || dep.UID != "" {
		t.Fatalf("Apply wrote into the caller's object: %+v", dep.TypeMeta)
	}
	again, err := c.Apply(ctx, dep)
	if err != nil || again.GetResourceVersion() != d.GetResourceVersion() {
		t.Fatalf("applying the same Deployment again: resourceVersion %s → %s (%v), want no change",
			d.GetResourceVersion(), again.GetResourceVersion(), err)
	}
	// The object as read back applies too: server-set metadata is left out.
	if _, err := c.Apply(ctx, d); err != nil {
		t.Fatalf("applying the stored Deployment: %v", err)
	}

	// A Service, unstructured, owned by the Deployment.
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"selector": map[string]any{"app": "web"},
			"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}}},
	}}
	if err := kube.SetOwner(svc, d, true); err != nil {
		t.Fatal(err)
	}
	s, err := c.Apply(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	refs := s.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != d.GetUID() || refs[0].Kind != "Deployment" || !*refs[0].Controller || !*refs[0].BlockOwnerDeletion {
		t.Fatalf("Service owner references: %+v", refs)
	}
	if ip, _, _ := unstructured.NestedString(s.Object, "spec", "clusterIP"); ip == "" {
		t.Fatalf("Service has no cluster IP: %v", s.Object["spec"])
	}

	// A ConfigMap: a key left out of the next apply is removed.
	cm, err := c.Apply(ctx, configMap(ns, "settings", map[string]any{"a": "1", "b": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	cm, err = c.Apply(ctx, configMap(ns, "settings", map[string]any{"a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); len(data) != 1 || data["a"] != "1" {
		t.Fatalf("ConfigMap data after applying without b: %v", data)
	}

	// A custom resource, once its definition is served.
	group := uniqueGroup("apply")
	installWidgets(t, c, group)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if err := kube.SetOwner(w, cm, false); err != nil {
		t.Fatal(err)
	}
	got, err := c.Apply(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 || len(got.GetOwnerReferences()) != 1 {
		t.Fatalf("Widget: %v", got.Object)
	}
	read, err := c.Get(ctx, kube.RefOf(got))
	if err != nil || read.GetResourceVersion() != got.GetResourceVersion() {
		t.Fatalf("get Widget: %v, %v", read, err)
	}
	list, err := c.List(ctx, group+"/v1", "Widget", kube.ListOptions{Namespace: ns})
	if err != nil || len(list) != 1 || list[0].GetName() != "w" {
		t.Fatalf("list Widgets: %v, %v", list, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestApplyFieldConflict: an apply that would change a field another field
// manager owns fails, naming the object and what to do, and changes
// nothing; with Force it takes the field over.
func TestApplyFieldConflict(t *testing.T) {
	a := newClient(t, "tend-a")
	ctx := t.Context()
	ns := newNamespace(t, a)
	first, err := a.Apply(ctx, configMap(ns, "shared", map[string]any{"x": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	b := newClient(t, "tend-b")
	_, err = b.Apply(ctx, configMap(ns, "shared", map[string]any{"x": "2", "y": "2"}))
	if !errors.Is(err, kube.ErrFieldConflict) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/shared") ||
		!strings.Contains(err.Error(), "Force") {
		t.Fatalf("conflicting apply: got %v, want ErrFieldConflict naming the object and Force", err)
	}
	cur, err := a.Get(ctx, kube.RefOf(first))
	if err != nil || cur.GetResourceVersion() != first.GetResourceVersion() {
		t.Fatalf("after the refused apply: %v, %v; want the object unchanged", cur.Object["data"], err)
	}
	forced, err := kube.NewClient(kube.ClientConfig{REST: restConfig(t), FieldManager: "tend-b", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := forced.Apply(ctx, configMap(ns, "shared", map[string]any{"x": "2", "y": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(got.Object, "data"); data["x"] != "2" || data["y"] != "2" {
		t.Fatalf("forced apply: data %v", data)
	}
}

// TestApplyNotInstalled: a kind the API server does not serve fails with
// ErrNotInstalled naming the object; once its definition is installed the
// same client finds it.
func TestApplyNotInstalled(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	group := uniqueGroup("late")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
	}}
	_, err := c.Apply(ctx, w)
	if !errors.Is(err, kube.ErrNotInstalled) || !strings.Contains(err.Error(), "Widget."+group+" "+ns+"/w") ||
		!strings.Contains(err.Error(), "install the CustomResourceDefinition") {
		t.Fatalf("apply of a kind not served: got %v, want ErrNotInstalled naming the object", err)
	}
	installWidgets(t, c, group)
	if _, err := c.Apply(ctx, w); err != nil {
		t.Fatalf("apply once the definition is served: %v", err)
	}
}

// TestClientForbidden: requests RBAC refuses fail with ErrForbidden naming
// the object and the rights to grant, and leave nothing behind.
func TestClientForbidden(t *testing.T) {
	admin := newClient(t)
	ns := newNamespace(t, admin)
	cfg := restConfig(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tend-nobody"}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, err = c.Apply(ctx, configMap(ns, "x", map[string]any{"a": "1"}))
	if !errors.Is(err, kube.ErrForbidden) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/x") ||
		!strings.Contains(err.Error(), "grant the client's identity get, create and patch on configmaps in namespace "+ns) {
		t.Fatalf("apply without rights: got %v", err)
	}
	if _, err := admin.Get(ctx, kube.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the refused apply: got %v, want nothing created", err)
	}
	_, err = c.Delete(ctx, kube.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "x"}, kube.DeleteOptions{})
	if !errors.Is(err, kube.ErrForbidden) || !strings.Contains(err.Error(), "delete on deployments.apps") {
		t.Fatalf("delete without rights: got %v", err)
	}
}

// TestClientUnavailable: with no API server at the address, every call
// fails with ErrUnavailable naming the object and the address.
func TestClientUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := kube.NewClient(kube.ClientConfig{REST: &rest.Config{Host: "https://" + addr, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref := kube.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	_, errApply := c.Apply(ctx, configMap("ns", "x", nil))
	_, errGet := c.Get(ctx, ref)
	_, errDelete := c.Delete(ctx, ref, kube.DeleteOptions{})
	for _, err := range []error{errApply, errGet, errDelete} {
		if !errors.Is(err, kube.ErrUnavailable) || !strings.Contains(err.Error(), "ConfigMap ns/x") || !strings.Contains(err.Error(), addr) {
			t.Errorf("call with the API server down: got %v, want ErrUnavailable naming the object and %s", err, addr)
		}
	}
}

// TestApplyTerminatingNamespace: nothing can be applied into a namespace
// being deleted; the error says so and what to do.
func TestApplyTerminatingNamespace(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	nsRef := kube.Ref{APIVersion: "v1", Kind: "Namespace", Name: ns}
	// A finalizer of the test's own keeps the namespace Terminating, with
	// or without a namespace controller.
	cur, err := c.Get(ctx, nsRef)
	if err != nil {
		t.Fatal(err)
	}
	hold := kube.NewFinalizerObject(c, cur)
	if err := finalizer.Add(ctx, hold, "test.tend.dev/hold"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hold.Refresh(context.Background())
		_ = finalizer.Remove(context.Background(), hold, "test.tend.dev/hold")
	})
	left, err := c.Delete(ctx, nsRef, kube.DeleteOptions{})
	if err != nil || left == nil || !kube.Terminating(left) {
		t.Fatalf("delete of a namespace with a finalizer: %v, %v; want it Terminating", left, err)
	}
	_, err = c.Apply(ctx, configMap(ns, "late", nil))
	if !errors.Is(err, kube.ErrNamespaceTerminating) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/late") {
		t.Fatalf("apply into a Terminating namespace: got %v, want ErrNamespaceTerminating", err)
	}
	_, err = c.Apply(ctx, configMap("tend-missing-ns", "x", nil))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("apply into a missing namespace: got %v, want ErrNotFound", err)
	}
}

// TestDelete: deleting is idempotent, reports an object finalizers keep as
// Terminating, and leaves an object of another UID alone.
func TestDelete(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	plain, err := c.Apply(ctx, configMap(ns, "plain", nil))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if left, err := c.Delete(ctx, kube.RefOf(plain), kube.DeleteOptions{}); left != nil || err != nil {
			t.Fatalf("delete #%d: %v, %v; want gone", i+1, left, err)
		}
	}
	if _, err := c.Get(ctx, kube.RefOf(plain)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}

	held := configMap(ns, "held", nil)
	held.SetFinalizers([]string{"test.tend.dev/hold"})
	h, err := c.Apply(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := c.Delete(ctx, kube.RefOf(h), kube.DeleteOptions{UID: "not-its-uid"}); left != nil || err != nil {
		t.Fatalf("delete with another UID: %v, %v; want it reported gone", left, err)
	}
	if cur, err := c.Get(ctx, kube.RefOf(h)); err != nil || kube.Terminating(cur) {
		t.Fatalf("after a delete with another UID: %v, %v; want it untouched", cur, err)
	}
	for i := range 2 {
		left, err := c.Delete(ctx, kube.RefOf(h), kube.DeleteOptions{UID: h.GetUID()})
		if err != nil || left == nil || !kube.Terminating(left) || left.GetUID() != h.GetUID() {
			t.Fatalf("delete #%d of an object with a finalizer: %v, %v; want it Terminating", i+1, left, err)
		}
	}
	// Its finalizer removed (an apply that leaves it out), it goes.
	if _, err := c.Apply(ctx, configMap(ns, "held", nil)); err != nil {
		t.Fatal(err)
	}
	if left, err := c.Delete(ctx, kube.RefOf(h), kube.DeleteOptions{}); left != nil || err != nil {
		t.Fatalf("delete once the finalizer is gone: %v, %v", left, err)
	}
}

// TestDeletePropagation: foreground deletion keeps the owner Terminating
// until the garbage collector has deleted its dependents; background
// deletion removes the owner at once and the collector its dependents
// after.
func TestDeletePropagation(t *testing.T) {
	fullCluster(t)
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	for _, prop := range []metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground} {
		t.Run(string(prop), func(t *testing.T) {
			owner, err := c.Apply(ctx, configMap(ns, "owner-"+strings.ToLower(string(prop)), nil))
			if err != nil {
				t.Fatal(err)
			}
			dep := configMap(ns, owner.GetName()+"-dep", nil)
			dep.SetFinalizers([]string{"test.tend.dev/hold"}) // holds the foreground owner until removed
			if err := kube.SetOwner(dep, owner, true); err != nil {
				t.Fatal(err)
			}
			d, err := c.Apply(ctx, dep)
			if err != nil {
				t.Fatal(err)
			}
			left, err := c.Delete(ctx, kube.RefOf(owner), kube.DeleteOptions{Propagation: prop})
			if err != nil {
				t.Fatal(err)
			}
			if prop == metav1.DeletePropagationForeground {
				if left == nil || !slices.Contains(left.GetFinalizers(), metav1.FinalizerDeleteDependents) {
					t.Fatalf("foreground delete: %v; want the owner Terminating with %s", left, metav1.FinalizerDeleteDependents)
				}
			} else if left != nil {
				t.Fatalf("background delete: %v; want the owner gone", left)
			}
			// The collector deletes the dependent: Terminating under its
			// finalizer, which the test then removes.
			waitFor(t, "the dependent Terminating", func() (bool, string) {
				cur, err := c.Get(ctx, kube.RefOf(d))
				return err == nil && kube.Terminating(cur), fmt.Sprint(cur, err)
			})
			cur, err := c.Get(ctx, kube.RefOf(d))
			if err != nil {
				t.Fatal(err)
			}
			if err := finalizer.Remove(ctx, kube.NewFinalizerObject(c, cur), "test.tend.dev/hold"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the owner gone", func() (bool, string) {
				left, err := c.Delete(ctx, kube.RefOf(owner), kube.DeleteOptions{Propagation: prop})
				return left == nil && err == nil, fmt.Sprint(left, err)
			})
		})
	}
}

// TestFinalizerObject: the finalizer helper guards a Kubernetes object: it
// adds its finalizer, runs cleanup once deletion is requested, removes only
// its own finalizer, and the API server then deletes the object; stale
// writes are conflicts and a replaced object is not found.
func TestFinalizerObject(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	const name = "test.tend.dev/cleanup"
	cm, err := c.Apply(ctx, configMap(ns, "guarded", map[string]any{"a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	obj := kube.NewFinalizerObject(c, cm)
	applied := 0
	state, err := finalizer.Ensure(ctx, obj, name, func(context.Context) error { applied++; return nil }, nil)
	if err != nil || state != finalizer.Present || applied != 1 {
		t.Fatalf("Ensure on a new object: %v %v, applied %d", state, err, applied)
	}
	if got := obj.Object().GetFinalizers(); !slices.Equal(got, []string{name}) {
		t.Fatalf("finalizers after Ensure: %v", got)
	}

	// Another writer adds its finalizer meanwhile: a write from the stale
	// copy is a conflict, and Remove resolves it keeping the other.
	other := kube.NewFinalizerObject(c, obj.Object())
	if err := finalizer.Add(ctx, other, "test.tend.dev/other"); err != nil {
		t.Fatal(err)
	}
	stale := kube.NewFinalizerObject(c, obj.Object())
	if err := stale.SetFinalizers(ctx, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write from a stale read: got %v, want ErrConflict", err)
	}

	if left, err := c.Delete(ctx, kube.RefOf(cm), kube.DeleteOptions{}); err != nil || left == nil {
		t.Fatalf("delete: %v, %v; want Terminating", left, err)
	}
	if err := obj.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cleaned := 0
	state, err = finalizer.Ensure(ctx, obj, name, nil, func(context.Context) error { cleaned++; return nil })
	if err != nil || state != finalizer.Finalizing || cleaned != 1 {
		t.Fatalf("Ensure while Terminating: %v %v, cleaned %d", state, err, cleaned)
	}
	if got := obj.Object().GetFinalizers(); !slices.Equal(got, []string{"test.tend.dev/other"}) {
		t.Fatalf("finalizers after cleanup: %v; want only the other's", got)
	}
	if err := finalizer.Remove(ctx, other, "test.tend.dev/other"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, kube.RefOf(cm)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the last finalizer: %v; want the object gone", err)
	}
	if err := obj.SetFinalizers(ctx, []string{name}); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write to a deleted object: got %v", err)
	}

	// An object deleted and created anew under its name is another object:
	// a write from the old one fails and leaves the new one alone.
	r, err := c.Apply(ctx, configMap(ns, "replaced", nil))
	if err != nil {
		t.Fatal(err)
	}
	old := kube.NewFinalizerObject(c, r)
	if left, err := c.Delete(ctx, kube.RefOf(r), kube.DeleteOptions{}); left != nil || err != nil {
		t.Fatalf("delete: %v, %v", left, err)
	}
	again, err := c.Apply(ctx, configMap(ns, "replaced", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := finalizer.Add(ctx, old, name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Add on a replaced object: got %v, want ErrNotFound", err)
	}
	if cur, err := c.Get(ctx, kube.RefOf(again)); err != nil || len(cur.GetFinalizers()) != 0 {
		t.Fatalf("the new object: finalizers %v, %v; want none", cur.GetFinalizers(), err)
	}
}

// TestDeploymentAvailable: a Deployment applied to the test cluster becomes
// available once the deployment controller, the scheduler and kwok's nodes
// have run its pod; the check reports why until then.
func TestDeploymentAvailable(t *testing.T) {
	fullCluster(t)
	c := newClient(t)
	ctx := t.Context()
	ns := newNamespace(t, c)
	d, err := c.Apply(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:1"}}},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := kube.DeploymentAvailable(d, 1); ok || why == "" {
		t.Fatalf("a Deployment just applied: available %v (%q)", ok, why)
	}
	waitFor(t, "the Deployment available", func() (bool, string) {
		cur, err := c.Get(ctx, kube.RefOf(d))
		if err != nil {
			return false, err.Error()
		}
		ok, why := kube.DeploymentAvailable(cur, 1)
		if ok {
			if ok, why := kube.ConditionTrue(cur, "Available"); !ok {
				t.Errorf("available replicas but condition Available: %s", why)
			}
		}
		return ok, why
	})
	// Foreground deletion keeps it Terminating until its ReplicaSet and pod
	// are gone.
	left, err := c.Delete(ctx, kube.RefOf(d), kube.DeleteOptions{Propagation: metav1.DeletePropagationForeground})
	if err != nil || left == nil || !kube.Terminating(left) {
		t.Fatalf("foreground delete of a Deployment: %v, %v; want Terminating", left, err)
	}
	waitFor(t, "the Deployment gone", func() (bool, string) {
		left, err := c.Delete(ctx, kube.RefOf(d), kube.DeleteOptions{Propagation: metav1.DeletePropagationForeground})
		return left == nil && err == nil, fmt.Sprint(err)
	})
	rs, err := c.List(ctx, "apps/v1", "ReplicaSet", kube.ListOptions{Namespace: ns})
	if err != nil || len(rs) != 0 {
		t.Fatalf("ReplicaSets left after the Deployment: %d, %v", len(rs), err)
	}
}

// TestRefValidation: malformed refs fail before any request, naming the
// problem.
func TestRefValidation(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	for _, ref := range []kube.Ref{
		{Kind: "ConfigMap", Namespace: "ns", Name: "x"},
		{APIVersion: "v1", Namespace: "ns", Name: "x"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "x"},
		{APIVersion: "v1", Kind: "Namespace", Namespace: "ns", Name: "x"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a/b"},
	} {
		if _, err := c.Get(ctx, ref); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("get %#v: got %v, want ErrInvalid", ref, err)
		}
	}
	var owner unstructured.Unstructured
	owner.SetAPIVersion("v1")
	owner.SetKind("ConfigMap")
	owner.SetName("o")
	owner.SetNamespace("a")
	obj := configMap("b", "x", nil)
	if err := kube.SetOwner(obj, &owner, false); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("owner without uid: got %v", err)
	}
	owner.SetUID(types.UID("u1"))
	if err := kube.SetOwner(obj, &owner, false); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("owner in another namespace: got %v", err)
	}
}

// uniqueGroup returns an API group no other test or earlier run used:
// definitions outlive the test's namespace.
func uniqueGroup(prefix string) string {
	return fmt.Sprintf("%s%d-%d.test.tend.dev", prefix, time.Now().UnixNano()%1e9, namespaces.Add(1))
}
