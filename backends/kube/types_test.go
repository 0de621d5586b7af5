package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// widget is the kind of widgetSpec and widgetStatus.
var widget = kube.KindOf[widgetSpec, widgetStatus]("Widget")

// typedStore returns a store configured by cfg on the quiet API server, in
// a namespace and an API group of its own, with its definitions installed,
// each first changed by plant when it is not nil (a defect planted in what
// the API server is given), and removed after the test.
func typedStore(t *testing.T, cfg kube.Config, plant func(def *unstructured.Unstructured)) *kube.Store {
	t.Helper()
	cfg.REST = storeConfig(t)
	cfg.Namespace = storeNamespace(t, cfg.REST)
	cfg.Group = uniqueGroup("typed")
	s, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	installAs(t, s, plant)
	return s
}

// installAs installs the definitions of s, each changed by plant when it is
// not nil, and removes them after the test.
func installAs(t *testing.T, s *kube.Store, plant func(def *unstructured.Unstructured)) {
	t.Helper()
	c, err := kube.NewClient(kube.ClientConfig{REST: storeConfig(t), FieldManager: kube.DefaultFieldManager, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defs := s.Definitions()
	for _, def := range defs {
		if plant != nil {
			plant(def)
		}
	}
	if err := install(t, c, kube.InstallOptions{}, defs...); err != nil {
		t.Fatal(err)
	}
}

// schemaAt returns the schema of the definition def at the property path
// below openAPIV3Schema.
func schemaAt(def *unstructured.Unstructured, path ...string) map[string]any {
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	s, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
	for _, p := range path {
		props, _ := s["properties"].(map[string]any)
		s, _ = props[p].(map[string]any)
	}
	return s
}

// setSchemaAt sets the schema of def at the property path to s, or removes
// the property when s is nil.
func setSchemaAt(def *unstructured.Unstructured, s map[string]any, path ...string) {
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	fields := []string{"schema", "openAPIV3Schema"}
	for _, p := range path {
		fields = append(fields, "properties", p)
	}
	if s == nil {
		unstructured.RemoveNestedField(v, fields...)
	} else {
		_ = unstructured.SetNestedMap(v, s, fields...)
	}
	_ = unstructured.SetNestedSlice(def.Object, versions, "spec", "versions")
}

// collection returns the typed collection of kind in s.
func collection[Spec, Status any](t *testing.T, s *kube.Store, kind string) *store.Collection[Spec, Status] {
	t.Helper()
	c, err := store.NewCollection[Spec, Status](s, kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// getTable reads the kind's objects in the store's namespace as the API
// server prints them for `kubectl get`: the column names, and each row's
// cells by document key.
func getTable(t *testing.T, s *kube.Store, group, kind string) ([]string, map[string][]string) {
	t.Helper()
	var tbl metav1.Table
	get(t, fmt.Sprintf("/apis/%s/v1/namespaces/%s/%s", group, s.Namespace(), kube.Plural(kind)),
		"application/json;as=Table;v=v1;g=meta.k8s.io", &tbl)
	var columns []string
	for _, c := range tbl.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	rows := map[string][]string{}
	for _, r := range tbl.Rows {
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(r.Object.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, c := range r.Cells {
			if c == nil {
				c = "<none>"
			}
			cells = append(cells, fmt.Sprint(c))
		}
		rows[obj.Annotations[group+"/key"]] = cells
	}
	return columns, rows
}

// get GETs path from the quiet API server, accepting accept, and decodes
// the JSON answer into out.
func get(t *testing.T, path, accept string, out any) {
	t.Helper()
	if status, body := fetch(t, path, accept); status != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", path, status, body)
	} else if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// fetch GETs path from the quiet API server, accepting accept, and returns
// the answer's status code and body.
func fetch(t *testing.T, path, accept string) (int, []byte) {
	t.Helper()
	cfg := storeConfig(t)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// groupOf returns the API group of the store's definitions.
func groupOf(s *kube.Store) string {
	g, _, _ := unstructured.NestedString(s.Definitions()[0].Object, "spec", "group")
	return g
}

// TestColumns: `kubectl get` shows each driven document's State, Phase,
// Ready and Age, Ready for each kind of phase and Working once a status is
// written for a spec the controller has not decided on; the status read
// back is the one written, without the summary.
func TestColumns(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{widget}}, nil)
	if err := showsColumns(t, s); err != nil {
		t.Fatal(err)
	}
}

// TestColumnsCatchesWrongColumn: showsColumns catches a definition whose
// Ready column shows another field.
func TestColumnsCatchesWrongColumn(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{widget}}, func(def *unstructured.Unstructured) {
		versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
		columns := versions[0].(map[string]any)["additionalPrinterColumns"].([]any)
		columns[2].(map[string]any)["jsonPath"] = ".status.phase"
		_ = unstructured.SetNestedSlice(def.Object, versions, "spec", "versions")
	})
	err := showsColumns(t, s)
	if err == nil || !strings.Contains(err.Error(), "Settled") {
		t.Fatalf("a Ready column showing the phase: got %v, want the rows reported wrong", err)
	}
	t.Log(err)
}

// showsColumns writes documents of the driven kind Widget in each kind of
// phase to s and returns an error unless the API server's table of them
// shows what it should.
func showsColumns(t *testing.T, s *kube.Store) error {
	ctx := t.Context()
	c := collection[widgetSpec, widgetStatus](t, s, "Widget")
	type st = statemachine.Status[string, string]
	op := &statemachine.Operation[string]{ID: "op-1", Phase: "Creating", From: "Pending", Done: []string{"volume"}}
	now := time.Now().UTC().Truncate(time.Second)
	for _, tc := range []struct {
		key    string
		status *st // nil: none written
	}{
		{"settled", &st{Phase: "Running", Target: "Running", ObservedGeneration: 1}},
		{"working", &st{Phase: "Creating", Target: "Running", Operation: op, ObservedGeneration: 1}},
		{"fault", &st{Phase: "Fault", Target: "Running", ObservedGeneration: 1,
			Failure: &statemachine.Failure[string]{Operation: *op, Step: "volume", Cause: statemachine.CauseTerminal, Reason: "quota", At: now}}},
		{"refused", &st{Phase: "Deleted", Target: "Deleted", ObservedGeneration: 1,
			Refused: &statemachine.Refusal[string]{Intent: "Running", Reason: "deleted for good"}}},
		{"paused", &st{Phase: "Creating", Target: "Running", Operation: op, ObservedGeneration: 1,
			Paused: &statemachine.Pause{By: "ann", Reason: "looking", At: now}}},
		{"fresh", nil},
	} {
		o, err := c.Create(ctx, &store.Object[widgetSpec, widgetStatus]{Meta: store.Meta{Key: tc.key}, Spec: widgetSpec{State: "Running"}})
		if err != nil {
			t.Fatal(err)
		}
		if tc.status == nil {
			continue
		}
		o.Status = widgetStatus{Status: *tc.status, Endpoint: "10.0.0.1"}
		if o, err = c.UpdateStatus(ctx, o); err != nil {
			t.Fatal(err)
		}
		d, err := s.Get(ctx, "Widget", tc.key)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(o.Status)
		if strings.Contains(string(d.Status), kube.SummaryField) || !jsonEqual(d.Status, want) {
			return fmt.Errorf("%s: status read back %s, want %s", tc.key, d.Status, want)
		}
	}
	columns, rows := getTable(t, s, groupOf(s), "Widget")
	if want := []string{"Name", "State", "Phase", "Ready", "Age"}; !slices.Equal(columns, want) {
		return fmt.Errorf("columns %q, want %q", columns, want)
	}
	var errs []error
	for _, key := range []string{"settled", "working", "fault", "refused", "paused", "fresh"} {
		want := map[string][]string{
			"settled": {"Running", "Running", "Settled"},
			"working": {"Running", "Creating", "Working"},
			"fault":   {"Running", "Fault", "Fault"},
			"refused": {"Deleted", "Deleted", "Refused"},
			"paused":  {"Running", "Creating", "Paused"},
			"fresh":   {"<none>", "<none>", "<none>"},
		}[key]
		if got := rows[key]; len(got) != 5 || !slices.Equal(got[1:4], want) || got[4] == "<none>" {
			errs = append(errs, fmt.Errorf("%s: row %q, want State, Phase, Ready %q and an age", key, got, want))
		}
	}

	// The spec changes: a status written before the controller decided on
	// it says Working; the one written after, Settled.
	o, err := c.Get(ctx, "settled")
	if err != nil {
		t.Fatal(err)
	}
	o.Spec.State = "Stopped"
	if o, err = c.UpdateSpec(ctx, o); err != nil {
		t.Fatal(err)
	}
	o.Status.Endpoint = "10.0.0.2" // observed before deciding: generation 1
	if o, err = c.UpdateStatus(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, rows := getTable(t, s, groupOf(s), "Widget"); len(rows["settled"]) != 5 || rows["settled"][3] != "Working" {
		errs = append(errs, fmt.Errorf("after a spec change: row %q, want Working", rows["settled"]))
	}
	o.Status.Phase, o.Status.Target, o.Status.ObservedGeneration = "Stopped", "Stopped", o.Generation
	if _, err = c.UpdateStatus(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, rows := getTable(t, s, groupOf(s), "Widget"); len(rows["settled"]) != 5 ||
		!slices.Equal(rows["settled"][1:4], []string{"Stopped", "Stopped", "Settled"}) {
		errs = append(errs, fmt.Errorf("after deciding on the changed spec: row %q, want Stopped Stopped Settled", rows["settled"]))
	}
	return errors.Join(errs...)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestCategory: every kind of the store, typed or not, is in the category
// tend, which `kubectl get tend` lists.
func TestCategory(t *testing.T) {
	s := typedStore(t, kube.Config{Kinds: []string{"Gadget"}, Types: []kube.Kind{widget}}, nil)
	dc, err := discovery.NewDiscoveryClientForConfig(storeConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(groupOf(s) + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		if slices.Contains(r.Categories, kube.Category) {
			found[r.Name] = true
		}
	}
	if !found["gadgets"] || !found["widgets"] {
		t.Errorf("resources in the category %s: %v, want gadgets and widgets (discovery: %+v)", kube.Category, found, list.APIResources)
	}
}

// TestExplain: the API server publishes the schemas in its OpenAPI v3
// document, which `kubectl explain` reads: the spec's fields with their
// types and description tags, the machine's status fields described.
func TestExplain(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{widget}}, nil)
	group := groupOf(s)
	var widgetSchema map[string]any
	deadline := time.Now().Add(time.Minute)
	for widgetSchema == nil {
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		// The API server publishes a new group's document a moment after
		// the definition is served: until then, 404.
		path := "/openapi/v3/apis/" + group + "/v1"
		if status, body := fetch(t, path, "application/json"); status == http.StatusOK {
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		} else if status != http.StatusNotFound {
			t.Fatalf("GET %s: %d: %s", path, status, body)
		}
		for name, sch := range doc.Components.Schemas {
			if strings.HasSuffix(name, ".v1.Widget") {
				widgetSchema = sch
			}
		}
		if widgetSchema == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no Widget in the OpenAPI v3 document of %s/v1 after a minute", group)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	field := func(path ...string) map[string]any {
		sch := widgetSchema
		for _, p := range path {
			props, _ := sch["properties"].(map[string]any)
			sch, _ = props[p].(map[string]any)
		}
		return sch
	}
	for _, tc := range []struct {
		path       []string
		typ, descr string
	}{
		{[]string{"spec", "replicas"}, "integer", "How many replicas run."},
		{[]string{"spec", "state"}, "string", "The intent: Running or Stopped."},
		{[]string{"status", "phase"}, "string", "The document's progress: the phase it is in."},
		{[]string{"status", "operation", "attempts"}, "integer", "Consecutive failed attempts of the current step."},
		{[]string{"status", "endpoint"}, "string", "Where the widget answers."},
	} {
		got := field(tc.path...)
		if got["type"] != tc.typ || got["description"] != tc.descr {
			t.Errorf("%s: %v, want type %s and description %q", strings.Join(tc.path, "."), got, tc.typ, tc.descr)
		}
	}
}

// refusesMalformed writes specs and statuses of the wrong shape to the
// driven kind Widget of s and returns an error unless the API server
// refuses each (store.ErrInvalid) and accepts the well-formed ones.
func refusesMalformed(ctx context.Context, s *kube.Store) error {
	var n atomic.Int64
	create := func(spec string) error {
		_, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("w-%d", n.Add(1))}, Spec: []byte(spec)})
		return err
	}
	for _, spec := range []string{`{"state":"Running","replicas":3}`, `{"state":"Stopped"}`} {
		if err := create(spec); err != nil {
			return fmt.Errorf("well-formed spec %s: %w", spec, err)
		}
	}
	for _, spec := range []string{
		`{"state":"Running","replicas":"three"}`,
		`{"state":"Running","replicas":3000000000}`, // beyond int32
		`{"state":7}`,
		`{"state":"Running","labels":{"a":1}}`,
	} {
		if err := create(spec); !errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("malformed spec %s: got %v, want it refused with ErrInvalid", spec, err)
		}
	}
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "w-status"}, Spec: []byte(`{"state":"Running"}`)})
	if err != nil {
		return err
	}
	d.Status = []byte(`{"phase":"Running","target":"Running","operation":{"id":"x","phase":"Creating","from":"Pending","attempts":"many"}}`)
	if _, err := s.UpdateStatus(ctx, d); !errors.Is(err, store.ErrInvalid) {
		return fmt.Errorf("malformed status %s: got %v, want it refused with ErrInvalid", d.Status, err)
	}
	return nil
}

// TestMalformedSpecRefused: the API server refuses a spec or a status of
// the wrong shape before the controller sees it.
func TestMalformedSpecRefused(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{widget}}, nil)
	if err := refusesMalformed(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// TestMalformedSpecRefusedCatchesDroppedType: refusesMalformed catches a
// definition whose spec field lost its type (any JSON accepted there).
func TestMalformedSpecRefusedCatchesDroppedType(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{widget}}, func(def *unstructured.Unstructured) {
		setSchemaAt(def, map[string]any{"x-kubernetes-preserve-unknown-fields": true}, "spec", "replicas")
	})
	err := refusesMalformed(t.Context(), s)
	if err == nil || !strings.Contains(err.Error(), "three") {
		t.Fatalf("a definition without the replicas' type: got %v, want the malformed replicas reported accepted", err)
	}
	t.Log(err)
}

// TestInstallUpgrades: Install brings a definition installed for a kind of
// any JSON up to the kind's types: columns, schemas, and the documents
// stored before still read.
func TestInstallUpgrades(t *testing.T) {
	old := typedStore(t, kube.Config{Kinds: []string{"Widget"}}, nil)
	ctx := t.Context()
	d, err := old.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "before"}, Spec: []byte(`{"state":"Running","replicas":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = []byte(`{"phase":"Running","target":"Running","observedGeneration":1}`)
	if d, err = old.UpdateStatus(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "loose"}, Spec: []byte(`{"replicas":"three"}`)}); err != nil {
		t.Fatalf("before the upgrade any spec is stored: %v", err)
	}

	s, err := kube.New(kube.Config{REST: storeConfig(t), Namespace: old.Namespace(), Group: groupOf(old), Types: []kube.Kind{widget}})
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Install(ictx); err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: storeConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	def, err := c.Get(ctx, definitionRef(s.Definitions()[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaAt(def, "spec"); got["x-kubernetes-preserve-unknown-fields"] != nil || schemaAt(def, "spec", "replicas")["type"] != "integer" {
		t.Errorf("the upgraded definition's spec: %v", got)
	}
	if got, _, _ := unstructured.NestedStringSlice(def.Object, "spec", "names", "categories"); !slices.Equal(got, []string{kube.Category}) {
		t.Errorf("the upgraded definition's categories: %q", got)
	}
	got, err := s.Get(ctx, "Widget", "before")
	if err != nil || !jsonEqual(got.Spec, d.Spec) || !jsonEqual(got.Status, d.Status) {
		t.Fatalf("a document stored before the upgrade: %s %s, %v; want %s %s", got.Spec, got.Status, err, d.Spec, d.Status)
	}
	got.Status = d.Status // unchanged: written for the summary alone
	if _, err := s.UpdateStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, rows := getTable(t, s, groupOf(s), "Widget"); !slices.Equal(rows["before"][1:4], []string{"Running", "Running", "Settled"}) {
		t.Errorf("after the upgrade: row %q, want Running Running Settled", rows["before"])
	}
	if err := refusesMalformed(ctx, s); err != nil {
		t.Errorf("after the upgrade: %v", err)
	}
}

// roundTrip stores v as the spec and the status of a new document of the
// kind Thing and returns an error unless both read back equal to v.
func roundTrip(ctx context.Context, c *store.Collection[everything, everything], key string, v everything) error {
	o, err := c.Create(ctx, &store.Object[everything, everything]{Meta: store.Meta{Key: key}, Spec: v})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	o.Status = v
	if _, err := c.UpdateStatus(ctx, o); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	got, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	for part, g := range map[string]everything{"spec": got.Spec, "status": got.Status} {
		if !reflect.DeepEqual(g, v) {
			want, _ := json.Marshal(v)
			back, _ := json.Marshal(g)
			return fmt.Errorf("%s: wrote %s, read back %s", part, want, back)
		}
	}
	return nil
}

// everythings generates values of everything: JSON of every shape, times
// RFC 3339 can write, unsigned integers up to kube.MaxUint (the schema
// refuses more, see TestMalformedSpecRefused).
func everythings() *rapid.Generator[everything] {
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Float64(), func(f float64) any {
			if f == 0 {
				return 0.0 // the API server writes JSON's -0 as 0: one zero
			}
			return f
		}),
		rapid.Map(rapid.String(), func(s string) any { return s }),
	)
	anyJSON := rapid.OneOf(scalar,
		// Empty, not nil: encoding/json reads [] and {} back so.
		rapid.Map(rapid.SliceOfN(scalar, 0, 3), func(s []any) any { return append([]any{}, s...) }),
		rapid.Map(rapid.MapOfN(rapid.String(), scalar, 0, 3), func(m map[string]any) any {
			out := map[string]any{}
			maps.Copy(out, m)
			return out
		}),
	)
	leaf := rapid.Custom(func(t *rapid.T) tree { return tree{Name: rapid.String().Draw(t, "name")} })
	return rapid.MakeCustom[everything](rapid.MakeConfig{
		Types: map[reflect.Type]*rapid.Generator[any]{
			// Years 1 to 9999, to the nanosecond.
			reflect.TypeFor[time.Time](): rapid.Custom(func(t *rapid.T) any {
				return time.Unix(rapid.Int64Range(-62135596800, 253402300799).Draw(t, "s"), rapid.Int64Range(0, 999999999).Draw(t, "ns")).UTC()
			}),
		},
		Fields: map[reflect.Type]map[string]*rapid.Generator[any]{
			reflect.TypeFor[everything](): {
				"Uint":   rapid.Map(rapid.UintMax(kube.MaxUint), func(u uint) any { return u }),
				"Uint64": rapid.Map(rapid.Uint64Max(kube.MaxUint), func(u uint64) any { return u }),
				"Any":    anyJSON,
				// As the store returns JSON: keys sorted, HTML not escaped.
				"Raw": rapid.Map(anyJSON, func(v any) any {
					var b strings.Builder
					enc := json.NewEncoder(&b)
					enc.SetEscapeHTML(false)
					_ = enc.Encode(v)
					return json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
				}),
				"Skipped": rapid.Just[any](""), // never encoded
			},
			// Shadowed by everything's Int, and cancelled by each other:
			// never encoded.
			reflect.TypeFor[Embedded](): {"Int": rapid.Just[any](0), "Clash": rapid.Just[any]("")},
			reflect.TypeFor[Other]():    {"Clash": rapid.Just[any]("")},
			reflect.TypeFor[tree](): {
				// Nil when empty: omitempty leaves it out.
				"Children": rapid.Map(rapid.SliceOfN(leaf, 0, 3), func(c []tree) any {
					if len(c) == 0 {
						return []tree(nil)
					}
					return c
				}),
			},
		},
	})
}

// TestSchemaKeepsValues: whatever value of its Go types a document holds,
// the API server keeps it through the generated schema (no field pruned,
// none refused, no number changed).
func TestSchemaKeepsValues(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{kube.KindOf[everything, everything]("Thing")}}, nil)
	c := collection[everything, everything](t, s, "Thing")
	_, err := c.Create(t.Context(), &store.Object[everything, everything]{Meta: store.Meta{Key: "big"}, Spec: everything{Uint64: math.MaxUint64}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a uint64 beyond the largest int64: got %v, want it refused with ErrInvalid", err)
	}
	var n atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		v := everythings().Draw(rt, "v")
		if err := roundTrip(t.Context(), c, fmt.Sprintf("t-%d", n.Add(1)), v); err != nil {
			rt.Fatal(err)
		}
	})
}

// TestSchemaKeepsValuesCatchesDroppedField: the round trip catches a
// definition that lost a field (the API server prunes it).
func TestSchemaKeepsValuesCatchesDroppedField(t *testing.T) {
	s := typedStore(t, kube.Config{Types: []kube.Kind{kube.KindOf[everything, everything]("Thing")}}, func(def *unstructured.Unstructured) {
		setSchemaAt(def, nil, "spec", "int16")
	})
	c := collection[everything, everything](t, s, "Thing")
	gen := everythings()
	for i := range 20 {
		if err := roundTrip(t.Context(), c, fmt.Sprintf("t-%d", i), gen.Example(i)); err != nil {
			t.Logf("caught at value %d: %v", i, err)
			return
		}
	}
	t.Fatal("20 values of a kind whose definition lost the field int16 all read back as written")
}
