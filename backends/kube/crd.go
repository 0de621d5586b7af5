package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tendhq/tend/store"
)

// definitionKind is the group, version and kind of a CustomResourceDefinition.
var definitionKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// installPoll is how often [Client.InstallDefinitions] checks whether a
// definition is served.
const installPoll = 100 * time.Millisecond

// CustomResourceDefinition returns a definition of the custom resource
// gvk names: namespaced, resource [Plural](gvk.Kind) of gvk.Group, the one
// version gvk.Version served and stored, spec and status of any JSON shape
// (x-kubernetes-preserve-unknown-fields) and the status subresource, so that
// spec and status have separate writers. [Store.Install] installs one per
// kind at version [Version], with more ([Store.Definitions]); install others
// with [Client.InstallDefinitions], or marshal the definition to JSON or
// YAML and apply it as a manifest. The API server checks the names when the
// definition is installed.
func CustomResourceDefinition(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	plural := Plural(gvk.Kind)
	anyJSON := map[string]any{"x-kubernetes-preserve-unknown-fields": true}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": definitionKind.GroupVersion().String(),
		"kind":       definitionKind.Kind,
		"metadata":   map[string]any{"name": plural + "." + gvk.Group},
		"spec": map[string]any{
			"group": gvk.Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"kind": gvk.Kind, "listKind": gvk.Kind + "List", "plural": plural, "singular": strings.ToLower(gvk.Kind),
			},
			"versions": []any{map[string]any{
				"name": gvk.Version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec":   anyJSON,
						"status": anyJSON,
					},
				}},
			}},
		},
	}}
}

// Install installs the CustomResourceDefinition of every kind of the store
// ([Store.Definitions]), bringing existing ones up to date (a kind moved
// from [Config.Kinds] to [Config.Types] gets its schemas and columns), and
// waits until the API server serves them all: it is
// [Client.InstallDefinitions] under the store's field manager, taking over
// fields another manager changed. It needs the right to read and write
// customresourcedefinitions, which a store's own identity usually lacks: run
// it at deployment with an administrator's configuration, or apply the
// definitions as manifests.
func (s *Store) Install(ctx context.Context) error {
	return s.client.InstallDefinitions(ctx, s.Definitions(), InstallOptions{})
}

// Definitions returns the CustomResourceDefinitions of the store's kinds,
// as [Store.Install] installs them, in the order of [Store.Kinds]:
// [CustomResourceDefinition] at version [Version] in the category
// [Category] (so `kubectl get tend` lists every kind), with, for a kind of
// [Config.Types], the schemas of its spec and status and, when it is
// driven, the columns State, Phase, Ready and Age. Marshal them to JSON or
// YAML to apply them as manifests.
func (s *Store) Definitions() []*unstructured.Unstructured {
	defs := make([]*unstructured.Unstructured, len(s.names))
	for i, kind := range s.names {
		defs[i] = s.definition(kind)
	}
	return defs
}

// InstallOptions says how [Client.InstallDefinitions] treats definitions
// that already exist.
type InstallOptions struct {
	// KeepExisting leaves a definition that already exists as it is, as a
	// program that brings minimal definitions of another project's custom
	// resources wants where that project's full ones are installed: only
	// missing definitions are created. By default every definition is
	// applied, so existing ones are brought up to date, as an owner of its
	// definitions wants.
	KeepExisting bool
}

// InstallDefinitions installs the CustomResourceDefinitions defs, then waits
// until the API server serves each: the definition is Established (its
// names accepted) and every version it serves answers a list of its kind.
// An existing definition is updated by server-side apply ([Client.Apply]'s
// rules hold: fields another manager owns fail with [ErrFieldConflict]
// unless [ClientConfig.Force] is set), or, with opts.KeepExisting, left as
// it is; either way the wait is for what defs ask for, so an existing
// definition that does not serve a version of defs is never served.
//
// defs must be apiextensions.k8s.io/v1 definitions that name their group,
// kind and versions, such as [CustomResourceDefinition] returns; otherwise it
// fails with an error matching [store.ErrInvalid] before any request. When
// ctx ends first, it returns an error naming the definition not yet served,
// which matches ctx.Err() and says what the API server last reported. It
// needs get, create and patch on customresourcedefinitions, and list on
// the defined resources.
func (c *Client) InstallDefinitions(ctx context.Context, defs []*unstructured.Unstructured, opts InstallOptions) error {
	wanted := make([]definition, len(defs))
	for i, def := range defs {
		if def == nil {
			return fmt.Errorf("kube: install CustomResourceDefinitions: %w: definition %d is nil", store.ErrInvalid, i)
		}
		d, err := definitionOf(def)
		if err != nil {
			return fmt.Errorf("kube: install CustomResourceDefinition %s: %w: %w", def.GetName(), store.ErrInvalid, err)
		}
		wanted[i] = d
	}
	for _, def := range defs {
		var err error
		if opts.KeepExisting {
			err = c.create(ctx, def)
		} else {
			_, err = c.Apply(ctx, def)
		}
		if err != nil {
			return err
		}
	}
	for _, d := range wanted {
		if err := c.waitServed(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// definition is what a CustomResourceDefinition asks the API server to
// serve.
type definition struct {
	name   string                    // the definition's name
	plural string                    // its resource
	kinds  []schema.GroupVersionKind // its kind at each version it serves
}

// definitionOf checks that def is a CustomResourceDefinition and returns
// what it asks to serve.
func definitionOf(def *unstructured.Unstructured) (definition, error) {
	if def.GroupVersionKind() != definitionKind || def.GetName() == "" {
		return definition{}, fmt.Errorf("not a named %s of %s but %s %q",
			definitionKind.Kind, definitionKind.GroupVersion(), def.GroupVersionKind(), def.GetName())
	}
	group, _, _ := unstructured.NestedString(def.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(def.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(def.Object, "spec", "names", "plural")
	if group == "" || kind == "" || plural == "" {
		return definition{}, fmt.Errorf("spec.group, spec.names.kind and spec.names.plural are required")
	}
	d := definition{name: def.GetName(), plural: plural}
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); served && name != "" {
			d.kinds = append(d.kinds, schema.GroupVersionKind{Group: group, Version: name, Kind: kind})
		}
	}
	if len(d.kinds) == 0 {
		return definition{}, fmt.Errorf("spec.versions serves no version")
	}
	return d, nil
}

// create creates def unless a definition of its name exists.
func (c *Client) create(ctx context.Context, def *unstructured.Unstructured) error {
	u, err := applied(def)
	if err != nil {
		return fmt.Errorf("kube: create CustomResourceDefinition %s: %w: %w", def.GetName(), store.ErrInvalid, err)
	}
	ref := RefOf(u)
	t, err := c.resolve(ctx, "create", ref, true)
	if err != nil {
		return err
	}
	_, err = t.res.Create(ctx, u, metav1.CreateOptions{FieldManager: c.cfg.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return c.fail("create", ref, t.gvr, err)
	}
	return nil
}

// waitServed polls until d is served, or ctx ends.
func (c *Client) waitServed(ctx context.Context, d definition) error {
	t := time.NewTicker(installPoll)
	defer t.Stop()
	var last error // the last reason not caused by ctx's end
	for {
		err := c.served(ctx, d)
		if err == nil {
			return nil
		}
		if !ending(ctx) {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("kube: CustomResourceDefinition %s is not served yet: %w", d.name, ctx.Err())
			}
			return fmt.Errorf("kube: CustomResourceDefinition %s is not served yet: %w (last: %w)", d.name, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// served returns nil when the definition d is Established and each of its
// kinds is found, through the client's discovery, at d's resource, which
// answers a list; otherwise it says why not.
func (c *Client) served(ctx context.Context, d definition) error {
	def, err := c.Get(ctx, Ref{APIVersion: definitionKind.GroupVersion().String(), Kind: definitionKind.Kind, Name: d.name})
	if err != nil {
		return err
	}
	if ok, why := ConditionTrue(def, "Established"); !ok {
		return fmt.Errorf("kube: CustomResourceDefinition %s: %s", d.name, why)
	}
	for _, gvk := range d.kinds {
		ref := Ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
		t, err := c.resolve(ctx, "list", ref, false)
		if err != nil {
			return err
		}
		if t.gvr.Resource != d.plural {
			return fmt.Errorf("kube: %v is served by resource %s, not by %s of CustomResourceDefinition %s", ref, t.gvr.Resource, d.plural, d.name)
		}
		if _, err := t.res.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return c.fail("list", ref, t.gvr, err)
		}
	}
	return nil
}

// ending reports whether ctx is done or past its deadline: a request fails
// on the deadline a moment before ctx says so (client-go's rate limiter
// refuses to wait beyond it), and that failure says nothing of the server.
func ending(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}
