package kube

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
)

// ErrUnsupportedType is the cause of the error [SchemaOf] and [New] return
// for a Go type encoding/json cannot encode (a channel, a function, a
// complex number, a map whose keys are not strings, integers or
// encoding.TextMarshaler): no schema describes it, so no document of it
// could be stored.
var ErrUnsupportedType = errors.New("kube: type has no JSON schema")

// SchemaOf returns the OpenAPI v3 schema, structural as Kubernetes requires
// of a CustomResourceDefinition, of the JSON encoding/json makes of a T: the
// schema [Store.Install] gives the spec and the status of a kind of
// [Config.Types]. It follows encoding/json's rules:
//
//   - a struct is an object of its exported fields, named by their json tags
//     ("-" leaves a field out), with the fields of embedded structs promoted
//     as encoding/json promotes them; a field's `description` tag becomes
//     its description, which `kubectl explain` shows;
//   - booleans, integers (bounded by their Go type, and uint64, uint and
//     uintptr by [MaxUint]),
//     floats and strings are themselves; a field with the ",string" option
//     is a string;
//   - []byte is a string (base64), other slices and arrays are arrays, maps
//     are objects of their values;
//   - time.Time is a string of format date-time; a type that implements
//     encoding.TextMarshaler (and not json.Marshaler) is a string;
//   - a type that implements json.Marshaler, an interface, and a struct
//     that contains itself where it recurs, may be any JSON
//     (x-kubernetes-preserve-unknown-fields);
//   - pointers, slices, maps, interfaces and any JSON may be null.
//
// The API server then rejects a spec or status of the wrong shape (a string
// where T has an integer) and removes fields T does not have. A type
// encoding/json cannot encode fails with an error that matches
// [ErrUnsupportedType] and names the field.
func SchemaOf[T any]() (map[string]any, error) {
	return schemaOf(reflect.TypeFor[T]())
}

// MaxUint is the largest value the schema of a uint64, uint or uintptr
// allows: 2⁶³−1024, the largest integer below 2⁶³ that a float64 holds. The
// API server reads JSON numbers as int64 or float64, so a larger one would
// come back as a float that no longer decodes; it keeps a schema's bounds as
// float64, so the bound cannot be 2⁶³−1 itself.
const MaxUint = 1<<63 - 1024

// schemaOf is [SchemaOf] of t.
func schemaOf(t reflect.Type) (map[string]any, error) {
	b := schemaBuilder{open: map[reflect.Type]bool{}}
	s, err := b.schema(t, t.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedType, err)
	}
	return s, nil
}

// schemaBuilder builds the schema of one type.
type schemaBuilder struct {
	open map[reflect.Type]bool // the structs being built, to stop at recursion
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	timeType      = reflect.TypeFor[time.Time]()
)

// implements reports whether t or *t implements the interface iface, as
// encoding/json finds a Marshaler on a value or on its address.
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface)
}

// anyJSON is the schema of any JSON value, null included.
func anyJSON() map[string]any {
	return map[string]any{"x-kubernetes-preserve-unknown-fields": true, "nullable": true}
}

// schema returns the schema of t, found at path (for errors).
func (b *schemaBuilder) schema(t reflect.Type, path string) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t.Kind() == reflect.Pointer:
		s, err := b.schema(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	case implements(t, jsonMarshaler):
		return anyJSON(), nil
	case implements(t, textMarshaler):
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s := map[string]any{"type": "integer"}
		if bits := t.Bits(); bits < 64 {
			s["minimum"], s["maximum"] = int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
		}
		return s, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s := map[string]any{"type": "integer", "minimum": int64(0), "maximum": int64(MaxUint)}
		if bits := t.Bits(); bits < 64 {
			s["maximum"] = int64(1)<<bits - 1
		}
		return s, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return anyJSON(), nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), jsonMarshaler) && !implements(t.Elem(), textMarshaler) {
			// The API server refuses "" as format byte: no format.
			return nullable(map[string]any{"type": "string", "description": "base64"}), nil
		}
		items, err := b.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return nullable(map[string]any{"type": "array", "items": items}), nil
	case reflect.Array:
		items, err := b.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items, "maxItems": int64(t.Len())}, nil
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, implements(k, textMarshaler):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr:
		default:
			return nil, fmt.Errorf("%s: map key type %s is not a string, an integer or an encoding.TextMarshaler", path, k)
		}
		values, err := b.schema(t.Elem(), path+"[key]")
		if err != nil {
			return nil, err
		}
		return nullable(map[string]any{"type": "object", "additionalProperties": values}), nil
	case reflect.Struct:
		return b.object(t, path)
	}
	return nil, fmt.Errorf("%s: encoding/json cannot encode a %s", path, t)
}

// nullable marks s as accepting null.
func nullable(s map[string]any) map[string]any {
	s["nullable"] = true
	return s
}

// object returns the schema of the struct t.
func (b *schemaBuilder) object(t reflect.Type, path string) (map[string]any, error) {
	if b.open[t] {
		// A structural schema cannot refer to itself: below here, any object.
		return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}, nil
	}
	b.open[t] = true
	defer delete(b.open, t)
	props := map[string]any{}
	for _, f := range jsonFields(t) {
		var s map[string]any
		var err error
		if f.quoted {
			s = map[string]any{"type": "string"}
			if f.typ.Kind() == reflect.Pointer {
				nullable(s)
			}
		} else if s, err = b.schema(f.typ, path+"."+f.name); err != nil {
			return nil, err
		}
		if d := cmpOr(f.description, machineDescription(f.owner, f.name)); d != "" {
			s["description"] = d
		}
		props[f.name] = s
	}
	s := map[string]any{"type": "object"}
	if len(props) > 0 {
		s["properties"] = props
	}
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jsonField is a field of a struct as encoding/json encodes it.
type jsonField struct {
	name        string
	tagged      bool  // named by its json tag
	index       []int // its index sequence, through embedded structs
	typ         reflect.Type
	quoted      bool         // the ",string" option applies
	owner       reflect.Type // the struct that declares it
	description string
}

// jsonFields returns the fields encoding/json encodes of the struct t, by
// its rules (those of its typeFields): exported fields and the promoted
// fields of embedded structs, breadth first, where of fields of one name the
// shallowest wins, a tagged one over an untagged one at the same depth, and
// two at the same depth cancel each other.
func jsonFields(t reflect.Type) []jsonField {
	var fields []jsonField
	next := []jsonField{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if slices.Contains(strings.Split(opts, ","), "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					field := jsonField{name: name, tagged: tagged, index: index, typ: sf.Type, quoted: quoted,
						owner: f.typ, description: sf.Tag.Get("description")}
					fields = append(fields, field)
					if count[f.typ] > 1 {
						// Two embeddings of one struct at one depth: their
						// fields cancel each other below.
						fields = append(fields, field)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, jsonField{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		n := 1
		for i+n < len(fields) && fields[i+n].name == fields[i].name {
			n++
		}
		if n == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i += n
	}
	return out
}

// validTag reports whether encoding/json accepts s as a field name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
