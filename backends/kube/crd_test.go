package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/store"
)

// sourceLabel marks who wrote a definition in these tests.
const sourceLabel = "test.tend.dev/source"

// definition returns the definition of gvk labelled with its source.
func definition(gvk schema.GroupVersionKind, source string) *unstructured.Unstructured {
	def := kube.CustomResourceDefinition(gvk)
	def.SetLabels(map[string]string{sourceLabel: source})
	return def
}

func definitionRef(def *unstructured.Unstructured) kube.Ref {
	return kube.Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: def.GetName()}
}

// install calls InstallDefinitions with a minute to finish and removes the
// definitions after the test.
func install(t *testing.T, c *kube.Client, opts kube.InstallOptions, defs ...*unstructured.Unstructured) error {
	t.Helper()
	for _, def := range defs {
		t.Cleanup(func() { _, _ = c.Delete(context.Background(), definitionRef(def), kube.DeleteOptions{}) })
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return c.InstallDefinitions(ctx, defs, opts)
}

// source returns the source label of the installed definition def.
func source(t *testing.T, c *kube.Client, def *unstructured.Unstructured) string {
	t.Helper()
	u, err := c.Get(t.Context(), definitionRef(def))
	if err != nil {
		t.Fatal(err)
	}
	return u.GetLabels()[sourceLabel]
}

// TestInstallDefinitions: the definitions are served, at the version each
// names, when InstallDefinitions returns; installing them again changes
// nothing.
func TestInstallDefinitions(t *testing.T) {
	c := newClient(t)
	group := uniqueGroup("install")
	gvks := []schema.GroupVersionKind{{Group: group, Version: "v1", Kind: "Widget"}, {Group: group, Version: "v2", Kind: "Gadget"}}
	defs := []*unstructured.Unstructured{definition(gvks[0], "test"), definition(gvks[1], "test")}
	if err := install(t, c, kube.InstallOptions{}, defs...); err != nil {
		t.Fatal(err)
	}
	// A client that has not read discovery yet finds both kinds at once, and
	// no other version.
	fresh := newClient(t)
	ns := newNamespace(t, fresh)
	for _, gvk := range gvks {
		if _, err := fresh.List(t.Context(), gvk.GroupVersion().String(), gvk.Kind, kube.ListOptions{Namespace: ns}); err != nil {
			t.Errorf("list %v right after install: %v", gvk, err)
		}
		u, err := fresh.Get(t.Context(), definitionRef(kube.CustomResourceDefinition(gvk)))
		if err != nil {
			t.Fatal(err)
		}
		if ok, why := kube.ConditionTrue(u, "Established"); !ok {
			t.Errorf("definition %s right after install: %s", u.GetName(), why)
		}
	}
	if _, err := fresh.List(t.Context(), group+"/v1", "Gadget", kube.ListOptions{}); !errors.Is(err, kube.ErrNotInstalled) {
		t.Errorf("list Gadget at v1: got %v, want ErrNotInstalled", err)
	}
	for _, opts := range []kube.InstallOptions{{}, {KeepExisting: true}} {
		if err := install(t, c, opts, defs...); err != nil {
			t.Errorf("install again with %+v: %v", opts, err)
		}
	}
}

// TestInstallDefinitionsExisting: by default an existing definition is
// brought to the given one, through server-side apply's rules on fields
// another manager owns; with KeepExisting it is left as it is, and only
// missing definitions are created.
func TestInstallDefinitionsExisting(t *testing.T) {
	cfg := restConfig(t)
	client := func(manager string, force bool) *kube.Client {
		c, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: manager, Force: force})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	third, minimal, owner := client("third-party", false), client("tend-minimal", false), client("tend-owner", true)
	group := uniqueGroup("existing")
	gizmo := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gizmo"}
	sprocket := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Sprocket"}
	if err := install(t, third, kube.InstallOptions{}, definition(gizmo, "third-party")); err != nil {
		t.Fatal(err)
	}

	// Left alone: the existing definition keeps its content, the missing
	// one is created and served.
	err := install(t, minimal, kube.InstallOptions{KeepExisting: true}, definition(gizmo, "minimal"), definition(sprocket, "minimal"))
	if err != nil {
		t.Fatal(err)
	}
	if got := source(t, third, kube.CustomResourceDefinition(gizmo)); got != "third-party" {
		t.Errorf("KeepExisting: existing definition's source is %q, want it left at third-party", got)
	}
	if got := source(t, third, kube.CustomResourceDefinition(sprocket)); got != "minimal" {
		t.Errorf("KeepExisting: missing definition's source is %q, want minimal", got)
	}
	if _, err := minimal.List(t.Context(), sprocket.GroupVersion().String(), sprocket.Kind, kube.ListOptions{}); err != nil {
		t.Errorf("KeepExisting: created definition not served: %v", err)
	}

	// Kept current: a field another manager owns is a conflict that changes
	// nothing, unless the client forces.
	err = install(t, minimal, kube.InstallOptions{}, definition(gizmo, "minimal"))
	if !errors.Is(err, kube.ErrFieldConflict) || !strings.Contains(err.Error(), "gizmos."+group) {
		t.Errorf("update of another manager's field: got %v, want ErrFieldConflict naming the definition", err)
	}
	if got := source(t, third, kube.CustomResourceDefinition(gizmo)); got != "third-party" {
		t.Errorf("after a conflict the source is %q, want third-party", got)
	}
	if err := install(t, owner, kube.InstallOptions{}, definition(gizmo, "owner")); err != nil {
		t.Fatal(err)
	}
	if got := source(t, third, kube.CustomResourceDefinition(gizmo)); got != "owner" {
		t.Errorf("forced install: source is %q, want owner", got)
	}
}

// TestInstallDefinitionsDeadline: a definition that is never served makes
// InstallDefinitions return when ctx ends, with an error that matches
// ctx's, names the definition and says why it is not served.
func TestInstallDefinitionsDeadline(t *testing.T) {
	c := newClient(t)
	group := uniqueGroup("deadline")
	widget := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"}
	if err := install(t, c, kube.InstallOptions{}, kube.CustomResourceDefinition(widget)); err != nil {
		t.Fatal(err)
	}
	// The existing definition serves v1 only and is left alone: v2 never
	// answers.
	v2 := kube.CustomResourceDefinition(schema.GroupVersionKind{Group: group, Version: "v2", Kind: "Widget"})
	// Another definition of kind Widget in the group: its names are never
	// accepted, so it is never Established.
	twin := kube.CustomResourceDefinition(widget)
	twin.SetName("widgettwins." + group)
	t.Cleanup(func() { _, _ = c.Delete(context.Background(), definitionRef(twin), kube.DeleteOptions{}) })
	_ = unstructured.SetNestedField(twin.Object, "widgettwins", "spec", "names", "plural")
	_ = unstructured.SetNestedField(twin.Object, "widgettwin", "spec", "names", "singular")

	for _, tc := range []struct {
		name string
		def  *unstructured.Unstructured
		opts kube.InstallOptions
		why  error
		says string
	}{
		{name: "version not served", def: v2, opts: kube.InstallOptions{KeepExisting: true}, why: kube.ErrNotInstalled, says: "Widget." + group},
		{name: "names not accepted", def: twin, says: "Established"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err := c.InstallDefinitions(ctx, []*unstructured.Unstructured{tc.def}, tc.opts)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tc.def.GetName()) ||
				!strings.Contains(err.Error(), tc.says) || (tc.why != nil && !errors.Is(err, tc.why)) {
				t.Fatalf("got %v, want a deadline error naming %s and saying %q", err, tc.def.GetName(), tc.says)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("returned %v after the deadline", d)
			}
			t.Log(err)
		})
	}
}

// TestInstallDefinitionsInvalid: what is not a definition fails with
// store.ErrInvalid before any request (the client's address answers none).
func TestInstallDefinitionsInvalid(t *testing.T) {
	c, err := kube.NewClient(kube.ClientConfig{REST: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	good := kube.CustomResourceDefinition(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	unserved := good.DeepCopy()
	_ = unstructured.SetNestedSlice(unserved.Object, []any{map[string]any{"name": "v1", "served": false, "storage": true}}, "spec", "versions")
	noGroup := good.DeepCopy()
	unstructured.RemoveNestedField(noGroup.Object, "spec", "group")
	configMap := configMap("default", "widgets.example.com", nil)
	for name, def := range map[string]*unstructured.Unstructured{
		"nil": nil, "no served version": unserved, "no group": noGroup, "a ConfigMap": configMap,
	} {
		err := c.InstallDefinitions(t.Context(), []*unstructured.Unstructured{good, def}, kube.InstallOptions{})
		if !errors.Is(err, store.ErrInvalid) || errors.Is(err, kube.ErrUnavailable) {
			t.Errorf("%s: got %v, want ErrInvalid before any request", name, err)
		}
	}
}

// TestStoreInstallRestores: Store.Install brings its definitions back to
// what the store needs after someone else changed them: here the status
// subresource, removed by a plain update, without which status writes fail.
func TestStoreInstallRestores(t *testing.T) {
	cfg := restConfig(t)
	group := uniqueGroup("restore")
	s, err := kube.New(kube.Config{REST: cfg, Kinds: []string{"Widget"}, Namespace: storeNamespace(t, cfg), Group: group})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}
	name := "widgets." + group
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defs := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	t.Cleanup(func() { _ = defs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	hasStatus := func() bool {
		t.Helper()
		u, err := defs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		_, ok, _ := unstructured.NestedMap(versions[0].(map[string]any), "subresources", "status")
		return ok
	}
	u, err := defs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	delete(versions[0].(map[string]any), "subresources")
	_ = unstructured.SetNestedSlice(u.Object, versions, "spec", "versions")
	if _, err := defs.Update(ctx, u, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if hasStatus() {
		t.Fatal("the update did not remove the status subresource")
	}
	if err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}
	if !hasStatus() {
		t.Fatal("Install did not restore the status subresource")
	}
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "w"}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = []byte(`{"ok":true}`)
	if d, err = s.UpdateStatus(ctx, d); err != nil || string(d.Status) != `{"ok":true}` {
		t.Fatalf("status write after Install: %s, %v", d.Status, err)
	}
}
