package kube

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Category is the category of every definition [Store.Install] installs:
// `kubectl get tend` lists the documents of every kind at once.
const Category = "tend"

// SummaryField is the field of the status of a driven kind (see [KindOf])
// where the store keeps the document's summary, which `kubectl get` shows
// as its Ready column. The store writes it with each status and leaves it
// out of the status it returns.
const SummaryField = "tendSummary"

// The summaries of a driven document, worked out from its status as the
// store writes it (the first that applies):
const (
	// SummaryPaused: an operator holds the document (status.paused).
	SummaryPaused = "Paused"
	// SummaryFault: the last operation failed and none has begun since
	// (status.failure, no status.operation): the document is held in its
	// machine's Fault phase, or the phase its failed operation fails to,
	// until an operator or a new intent moves it.
	SummaryFault = "Fault"
	// SummaryRefused: the intent is refused in the current phase
	// (status.refused).
	SummaryRefused = "Refused"
	// SummaryWorking: an operation is in flight (status.operation), or the
	// controller has not yet decided on the spec as it was when the status
	// was written (status.observedGeneration behind metadata.generation).
	SummaryWorking = "Working"
	// SummarySettled: none of the above: the document rests where its
	// machine put it for the spec it last saw.
	SummarySettled = "Settled"
)

// Kind is a kind of document whose spec and status have Go types, for
// [Config.Types]; make one with [KindOf].
type Kind struct {
	name         string
	spec, status reflect.Type
}

// KindOf returns the kind name whose documents have a spec of type Spec and
// a status of type Status, as a store.Collection[Spec, Status] of it encodes
// them. Its definition's spec and status schemas are [SchemaOf] Spec and
// Status, so `kubectl explain` documents their fields and the API server
// refuses a spec or status of another shape.
//
// A kind is driven when its Status is, or embeds, a statemachine.Status (it
// has the method MachineStatus): `kubectl get` then shows its documents'
// State (status.target), Phase (status.phase), Ready (the summary, see
// [SummaryField]) and Age.
func KindOf[Spec, Status any](name string) Kind {
	return Kind{name: name, spec: reflect.TypeFor[Spec](), status: reflect.TypeFor[Status]()}
}

// Name returns the kind's name.
func (k Kind) Name() string { return k.name }

// driven reports whether the status type t is, or embeds, the machine's
// status: *t has the method MachineStatus, which returns one.
func driven(t reflect.Type) bool {
	m, ok := reflect.PointerTo(t).MethodByName("MachineStatus")
	if !ok || m.Type.NumIn() != 1 || m.Type.NumOut() != 1 {
		return false
	}
	out := m.Type.Out(0)
	return out.Kind() == reflect.Pointer && out.Elem().PkgPath() == machinePackage &&
		strings.HasPrefix(out.Elem().Name(), "Status[")
}

// kindDefinition is what the store knows of a kind beyond its name.
type kindDefinition struct {
	spec, status map[string]any // the schemas; nil: any JSON
	columns      []any          // the printer columns; nil: Kubernetes' own (Age)
	driven       bool           // the store writes the summary into the status
}

// typedDefinition builds the definition of the kind k.
func typedDefinition(k Kind) (kindDefinition, error) {
	spec, err := schemaOf(k.spec)
	if err != nil {
		return kindDefinition{}, fmt.Errorf("kind %s: spec: %w", k.name, err)
	}
	status, err := schemaOf(k.status)
	if err != nil {
		return kindDefinition{}, fmt.Errorf("kind %s: status: %w", k.name, err)
	}
	d := kindDefinition{spec: spec, status: status, driven: driven(k.status)}
	if !d.driven {
		return d, nil
	}
	props, _ := status["properties"].(map[string]any)
	if status["type"] != "object" || props == nil {
		return kindDefinition{}, fmt.Errorf("kind %s: %w: the status of a driven kind must encode as an object", k.name, ErrUnsupportedType)
	}
	if _, ok := props[SummaryField]; ok {
		return kindDefinition{}, fmt.Errorf("kind %s: the status has a field %s, which the store writes", k.name, SummaryField)
	}
	props[SummaryField] = map[string]any{
		"type": "string", "enum": []any{SummaryPaused, SummaryFault, SummaryRefused, SummaryWorking, SummarySettled},
		"description": "Written by the store with each status: Paused (an operator holds the document), " +
			"Fault (the last operation failed and none has begun since), Refused (the intent is refused), " +
			"Working (an operation is in flight, or the spec changed since the controller last decided), Settled.",
	}
	column := func(name, path, description string) map[string]any {
		typ := "string"
		if s, ok := props[strings.TrimPrefix(path, ".status.")].(map[string]any); ok {
			switch t, _ := s["type"].(string); t {
			case "integer", "number", "boolean":
				typ = t
			}
		}
		return map[string]any{"name": name, "type": typ, "jsonPath": path, "description": description}
	}
	d.columns = []any{
		column("State", ".status.target", "The intent the machine serves."),
		column("Phase", ".status.phase", "The document's progress."),
		column("Ready", ".status."+SummaryField, "Paused, Fault, Refused, Working or Settled."),
		map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
	}
	return d, nil
}

// definition returns the CustomResourceDefinition of kind as the store
// installs it: [CustomResourceDefinition] in the category [Category], with
// the kind's schemas and columns.
func (s *Store) definition(kind string) *unstructured.Unstructured {
	def := CustomResourceDefinition(schema.GroupVersionKind{Group: s.cfg.Group, Version: Version, Kind: kind})
	_ = unstructured.SetNestedStringSlice(def.Object, []string{Category}, "spec", "names", "categories")
	k, ok := s.typed[kind]
	if !ok {
		return def
	}
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	root := map[string]any{"type": "object", "properties": map[string]any{
		"spec": k.spec, "status": k.status,
	}}
	v["schema"] = map[string]any{"openAPIV3Schema": root}
	if k.columns != nil {
		v["additionalPrinterColumns"] = k.columns
	}
	// SetNestedSlice copies the schemas: the definition is the caller's own.
	_ = unstructured.SetNestedSlice(def.Object, versions, "spec", "versions")
	return def
}

// summary returns the summary of a driven document's status, written when
// the spec was at generation.
func summary(status map[string]any, generation int64) string {
	set := func(field string) bool { return status[field] != nil }
	observed, _ := status["observedGeneration"].(int64)
	if f, ok := status["observedGeneration"].(float64); ok {
		observed = int64(f)
	}
	switch {
	case set("paused"):
		return SummaryPaused
	case set("failure") && !set("operation"):
		return SummaryFault
	case set("refused"):
		return SummaryRefused
	case set("operation"), observed < generation:
		return SummaryWorking
	}
	return SummarySettled
}
