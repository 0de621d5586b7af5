package kube_test

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/statemachine"
)

// widgetSpec and widgetStatus are the types of a driven kind in these
// tests.
type widgetSpec struct {
	State    string            `json:"state" description:"The intent: Running or Stopped."`
	Replicas int32             `json:"replicas,omitempty" description:"How many replicas run."`
	Labels   map[string]string `json:"labels,omitempty"`
}

type widgetStatus struct {
	statemachine.Status[string, string]
	Endpoint string `json:"endpoint,omitempty" description:"Where the widget answers."`
}

// textual encodes as text.
type textual struct{ a, b string }

func (x textual) MarshalText() ([]byte, error) { return []byte(x.a + ":" + x.b), nil }
func (x *textual) UnmarshalText(b []byte) error {
	x.a, x.b, _ = strings.Cut(string(b), ":")
	return nil
}

// tree contains itself.
type tree struct {
	Name     string `json:"name"`
	Children []tree `json:"children,omitempty"`
}

// Embedded is promoted into everything; its Int is shadowed by
// everything's.
type Embedded struct {
	Promoted int `json:"promoted"`
	Int      int `json:"int"`
	Clash    string
}

// Other is embedded beside Embedded: its Clash cancels Embedded's, as both
// are at one depth.
type Other struct {
	Clash string
	Own   bool
}

// everything has a field of each shape the schema describes.
type everything struct {
	Bool     bool              `json:"bool"`
	Int      int               `json:"int"`
	Int8     int8              `json:"int8"`
	Int16    int16             `json:"int16"`
	Int32    int32             `json:"int32"`
	Int64    int64             `json:"int64"`
	Uint     uint              `json:"uint"`
	Uint8    uint8             `json:"uint8"`
	Uint16   uint16            `json:"uint16"`
	Uint32   uint32            `json:"uint32"`
	Uint64   uint64            `json:"uint64"`
	Float32  float32           `json:"float32"`
	Float64  float64           `json:"float64"`
	String   string            `json:"string,omitempty"`
	Quoted   int64             `json:"quoted,string"`
	QuotedP  *bool             `json:",string"`
	Bytes    []byte            `json:"bytes"`
	Array    [3]int16          `json:"array"`
	Slice    []string          `json:"slice"`
	Map      map[string]int    `json:"map"`
	IntKeys  map[int]string    `json:"intKeys"`
	Pointer  *tree             `json:"pointer"`
	Time     time.Time         `json:"time"`
	Duration time.Duration     `json:"duration"`
	Text     textual           `json:"text"`
	Raw      json.RawMessage   `json:"raw"`
	Any      any               `json:"any"`
	Tree     tree              `json:"tree"`
	Nested   map[string][]tree `json:"nested"`
	Skipped  string            `json:"-"`
	Embedded
	Other
}

// properties returns the names of the properties of the object schema s.
func properties(s map[string]any) []string {
	p, _ := s["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(p))
}

// TestSchemaFollowsEncodingJSON: the properties of a struct's schema are
// the keys encoding/json writes for it, promoted and cancelled fields
// included.
func TestSchemaFollowsEncodingJSON(t *testing.T) {
	check := func(name string, v any, s map[string]any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(filled(reflect.ValueOf(v)).Interface())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if want, got := slices.Sorted(maps.Keys(m)), properties(s); !slices.Equal(got, want) {
			t.Errorf("%s: properties %q, encoding/json writes %q", name, got, want)
		}
	}
	s, err := kube.SchemaOf[everything]()
	check("everything", everything{}, s, err)
	s, err = kube.SchemaOf[widgetStatus]()
	check("widgetStatus", widgetStatus{}, s, err)
	s, err = kube.SchemaOf[statemachine.Operation[int]]()
	check("Operation", statemachine.Operation[int]{}, s, err)
}

// filled returns a copy of v with every field, element and pointer set to
// something other than its zero value, so that encoding/json omits none,
// down to a depth of 4 (types may contain themselves).
func filled(v reflect.Value) reflect.Value { return fill(v, 4) }

func fill(v reflect.Value, depth int) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	if depth == 0 {
		return out
	}
	filled := func(v reflect.Value) reflect.Value { return fill(v, depth-1) }
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			out.Set(reflect.ValueOf(time.Unix(1, 0)))
			break
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(filled(v.Field(i)))
			}
		}
	case reflect.Pointer:
		out.Set(reflect.New(v.Type().Elem()))
		out.Elem().Set(filled(out.Elem()))
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			out.SetBytes([]byte(`{}`))
			break
		}
		out.Set(reflect.MakeSlice(v.Type(), 1, 1))
		out.Index(0).Set(filled(out.Index(0)))
	case reflect.Map:
		out.Set(reflect.MakeMap(v.Type()))
		out.SetMapIndex(filled(reflect.New(v.Type().Key()).Elem()), reflect.New(v.Type().Elem()).Elem())
	case reflect.String:
		out.SetString("x")
	case reflect.Bool:
		out.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		out.SetUint(1)
	case reflect.Float32, reflect.Float64:
		out.SetFloat(1)
	case reflect.Interface:
		out.Set(reflect.ValueOf("x"))
	}
	return out
}

// at returns the node of s at the property path.
func at(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		next, ok := s[p].(map[string]any)
		if !ok {
			if props, _ := s["properties"].(map[string]any); props != nil {
				next, ok = props[p].(map[string]any)
			}
		}
		if !ok {
			t.Fatalf("no %q in %v", p, s)
		}
		s = next
	}
	return s
}

// TestSchemaOf: each Go shape gets the schema encoding/json's output has.
func TestSchemaOf(t *testing.T) {
	s, err := kube.SchemaOf[everything]()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []string
		want map[string]any
	}{
		{[]string{"bool"}, map[string]any{"type": "boolean"}},
		{[]string{"int"}, map[string]any{"type": "integer"}},
		{[]string{"int8"}, map[string]any{"type": "integer", "minimum": int64(-128), "maximum": int64(127)}},
		{[]string{"uint16"}, map[string]any{"type": "integer", "minimum": int64(0), "maximum": int64(math.MaxUint16)}},
		{[]string{"uint64"}, map[string]any{"type": "integer", "minimum": int64(0), "maximum": int64(kube.MaxUint)}},
		{[]string{"float32"}, map[string]any{"type": "number"}},
		{[]string{"quoted"}, map[string]any{"type": "string"}},
		{[]string{"QuotedP"}, map[string]any{"type": "string", "nullable": true}},
		{[]string{"bytes"}, map[string]any{"type": "string", "description": "base64", "nullable": true}},
		{[]string{"array"}, map[string]any{"type": "array", "maxItems": int64(3),
			"items": map[string]any{"type": "integer", "minimum": int64(math.MinInt16), "maximum": int64(math.MaxInt16)}}},
		{[]string{"slice"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "nullable": true}},
		{[]string{"intKeys"}, map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "nullable": true}},
		{[]string{"time"}, map[string]any{"type": "string", "format": "date-time"}},
		{[]string{"duration"}, map[string]any{"type": "integer"}},
		{[]string{"text"}, map[string]any{"type": "string"}},
		{[]string{"raw"}, map[string]any{"x-kubernetes-preserve-unknown-fields": true, "nullable": true}},
		{[]string{"any"}, map[string]any{"x-kubernetes-preserve-unknown-fields": true, "nullable": true}},
		{[]string{"tree", "children", "items"}, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		{[]string{"pointer", "name"}, map[string]any{"type": "string"}},
		{[]string{"promoted"}, map[string]any{"type": "integer"}},
	} {
		if got := at(t, s, tc.path...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", strings.Join(tc.path, "."), got, tc.want)
		}
	}
	if got := at(t, s, "pointer")["nullable"]; got != true {
		t.Errorf("a pointer's schema is not nullable: %v", at(t, s, "pointer"))
	}

	st, err := kube.SchemaOf[widgetStatus]()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"endpoint":                "Where the widget answers.",
		"phase":                   "The document's progress: the phase it is in.",
		"operation.retryAt":       "When the step that failed last may run again.",
		"failure.operation.phase": "The transitional phase the operation drives.",
	} {
		if got := at(t, st, strings.Split(path, ".")...)["description"]; got != want {
			t.Errorf("description of %s: got %q, want %q", path, got, want)
		}
	}
}

// TestMachineFieldsDescribed: every field of the machine's status, as
// encoding/json writes it, has a description in the schema, so `kubectl
// explain` documents each.
func TestMachineFieldsDescribed(t *testing.T) {
	s, err := kube.SchemaOf[statemachine.Status[string, string]]()
	if err != nil {
		t.Fatal(err)
	}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			p := p.(map[string]any)
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", path, name)
			}
			walk(path+"."+name, p)
		}
	}
	walk("status", s)
}

// TestUnsupportedType: a type encoding/json cannot encode fails SchemaOf and
// New with ErrUnsupportedType, naming the field.
func TestUnsupportedType(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	type withFunc struct{ F func() }
	type withComplex struct{ Deep struct{ Z []complex128 } }
	type withKey struct{ M map[[2]int]string }
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct {
		kind kube.Kind
		says string
	}{
		{kube.KindOf[withChan, widgetStatus]("Chan"), ".c"},
		{kube.KindOf[widgetSpec, withFunc]("Func"), ".F"},
		{kube.KindOf[withComplex, widgetStatus]("Complex"), ".Deep.Z[]"},
		{kube.KindOf[withKey, widgetStatus]("Key"), ".M"},
	} {
		_, err := kube.New(kube.Config{REST: rc, Types: []kube.Kind{tc.kind}})
		if !errors.Is(err, kube.ErrUnsupportedType) || !strings.Contains(err.Error(), tc.says) ||
			!strings.Contains(err.Error(), tc.kind.Name()) {
			t.Errorf("%s: got %v, want ErrUnsupportedType naming the kind and %s", tc.kind.Name(), err, tc.says)
		}
	}
	if _, err := kube.SchemaOf[chan int](); !errors.Is(err, kube.ErrUnsupportedType) {
		t.Errorf("SchemaOf a channel: got %v", err)
	}
	// A kind in Kinds and in Types, and a status field named as the
	// summary, are refused too.
	type clash struct {
		statemachine.Status[string, string]
		Summary string `json:"tendSummary"`
	}
	for name, cfg := range map[string]kube.Config{
		"twice":   {REST: rc, Kinds: []string{"Widget"}, Types: []kube.Kind{kube.KindOf[widgetSpec, widgetStatus]("Widget")}},
		"summary": {REST: rc, Types: []kube.Kind{kube.KindOf[widgetSpec, clash]("Widget")}},
	} {
		if _, err := kube.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// version returns the first version of the definition def.
func version(t *testing.T, def *unstructured.Unstructured) map[string]any {
	t.Helper()
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("definition %s has %d versions", def.GetName(), len(versions))
	}
	return versions[0].(map[string]any)
}

// TestDefinitions: every kind is in the category; a driven kind has the
// columns and its types' schemas, a typed kind that is not driven its
// schemas alone, a kind of Kinds any JSON.
func TestDefinitions(t *testing.T) {
	s, err := kube.New(kube.Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Kinds: []string{"Gadget"},
		Types: []kube.Kind{kube.KindOf[widgetSpec, widgetStatus]("Widget"), kube.KindOf[everything, everything]("Thing")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Kinds(); !slices.Equal(got, []string{"Gadget", "Thing", "Widget"}) {
		t.Errorf("Kinds: %q", got)
	}
	defs := s.Definitions()
	for _, def := range defs {
		if got, _, _ := unstructured.NestedStringSlice(def.Object, "spec", "names", "categories"); !slices.Equal(got, []string{kube.Category}) {
			t.Errorf("%s: categories %q", def.GetName(), got)
		}
	}
	gadget, thing, widget := version(t, defs[0]), version(t, defs[1]), version(t, defs[2])
	if _, ok := gadget["additionalPrinterColumns"]; ok {
		t.Errorf("gadgets have columns")
	}
	if got := at(t, gadget, "schema", "openAPIV3Schema", "spec"); got["x-kubernetes-preserve-unknown-fields"] != true {
		t.Errorf("gadgets' spec: %v", got)
	}
	if _, ok := thing["additionalPrinterColumns"]; ok {
		t.Errorf("things, not driven, have columns")
	}
	if got := at(t, thing, "schema", "openAPIV3Schema", "spec", "int8")["maximum"]; got == nil {
		t.Errorf("things' spec has no typed int8")
	}
	var columns []string
	for _, c := range widget["additionalPrinterColumns"].([]any) {
		c := c.(map[string]any)
		columns = append(columns, c["name"].(string)+"="+c["jsonPath"].(string))
	}
	want := []string{"State=.status.target", "Phase=.status.phase", "Ready=.status.tendSummary", "Age=.metadata.creationTimestamp"}
	if !slices.Equal(columns, want) {
		t.Errorf("widgets' columns: %q, want %q", columns, want)
	}
	if got := at(t, widget, "schema", "openAPIV3Schema", "status", kube.SummaryField)["enum"]; got == nil {
		t.Errorf("widgets' status has no summary")
	}
	// Each call returns definitions of the caller's own.
	delete(at(t, widget, "schema", "openAPIV3Schema", "spec")["properties"].(map[string]any), "replicas")
	if again := version(t, s.Definitions()[2]); at(t, again, "schema", "openAPIV3Schema", "spec", "replicas") == nil {
		t.Errorf("a change to a returned definition reached the store's")
	}
}
