package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installPoll is how often Install checks whether a definition is served.
const installPoll = 100 * time.Millisecond

// CustomResourceDefinition returns the definition of kind's custom resource
// in group, as [Store.Install] creates it: namespaced, version v1 served and
// stored, spec and status of any JSON shape (x-kubernetes-preserve-unknown-fields)
// and the status subresource, so that spec and status have separate writers.
// Marshal it to JSON or YAML to apply it as a manifest instead.
func CustomResourceDefinition(group, kind string) *unstructured.Unstructured {
	plural := Plural(kind)
	anyJSON := map[string]any{"x-kubernetes-preserve-unknown-fields": true}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{
				"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind),
			},
			"versions": []any{map[string]any{
				"name": Version, "served": true, "storage": true,
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

// Install creates or updates the CustomResourceDefinition of every kind of
// the store and waits until the API server serves them all. It needs the
// right to write customresourcedefinitions, which a store's own identity
// usually lacks: run it at deployment with an administrator's
// configuration, or apply [CustomResourceDefinition]'s output as a manifest.
func (s *Store) Install(ctx context.Context) error {
	crds := s.dyn.Resource(crdResource)
	for _, kind := range s.names {
		want := CustomResourceDefinition(s.cfg.Group, kind)
		name := want.GetName()
		cur, err := crds.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = crds.Create(ctx, want, metav1.CreateOptions{FieldManager: s.cfg.FieldManager})
		case err == nil:
			want.SetResourceVersion(cur.GetResourceVersion())
			_, err = crds.Update(ctx, want, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kube: install CustomResourceDefinition %s: %w", name, err)
		}
	}
	for _, kind := range s.names {
		if err := s.waitServed(ctx, kind); err != nil {
			return err
		}
	}
	return nil
}

// waitServed waits until the definition of kind is Established and its
// resource answers a list.
func (s *Store) waitServed(ctx context.Context, kind string) error {
	name := Plural(kind) + "." + s.cfg.Group
	t := time.NewTicker(installPoll)
	defer t.Stop()
	for {
		err := s.served(ctx, name, kind)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube: waiting for CustomResourceDefinition %s to be served: %w (last: %w)", name, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (s *Store) served(ctx context.Context, name, kind string) error {
	u, err := s.dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ok, why := ConditionTrue(u, "Established"); !ok {
		return errors.New(why)
	}
	_, err = s.resource(kind).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}
