package redact

import (
	"cmp"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Marker replaces each secret a [Scrubber] finds.
const Marker = "[redacted]"

// TagKey and TagOption mark a field sensitive: `tend:"sensitive"`. The tag
// may hold other options, separated by commas.
const (
	TagKey    = "tend"
	TagOption = "sensitive"
)

// maxDepth bounds how deep [Secrets] follows pointers, so a value that
// points to itself ends.
const maxDepth = 64

// Secrets returns the secrets held by the values given, each once, longest
// first. A value may be a struct, a pointer to one, or anything that holds
// structs; a value whose type has no sensitive field anywhere adds nothing.
func Secrets(values ...any) []string {
	var c collector
	for _, v := range values {
		if v == nil {
			continue
		}
		rv := reflect.ValueOf(v)
		if typeOf(rv.Type()).has {
			c.walk(rv, false, 0)
		}
	}
	if len(c.out) == 0 {
		return nil
	}
	slices.SortFunc(c.out, longestFirst)
	return slices.Compact(c.out)
}

// typeInfo is what Secrets needs to know of a type, found once.
type typeInfo struct {
	has    bool    // a sensitive field is reachable from the type
	fields []field // for a struct with has: the fields to visit
}

// field is a struct field to visit.
type field struct {
	index     int
	sensitive bool // every value under it is a secret
}

var types sync.Map // reflect.Type → *typeInfo

// typeOf returns the cached typeInfo of t.
func typeOf(t reflect.Type) *typeInfo {
	if ti, ok := types.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{has: reaches(t, map[reflect.Type]bool{})}
	if ti.has && t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			switch {
			case isSensitive(f):
				ti.fields = append(ti.fields, field{index: i, sensitive: true})
			case reaches(f.Type, map[reflect.Type]bool{}):
				ti.fields = append(ti.fields, field{index: i})
			}
		}
	}
	actual, _ := types.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// reaches reports whether a sensitive field is reachable from t. seen holds
// the types already looked at, so a recursive type ends.
func reaches(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return reaches(t.Elem(), seen)
	case reflect.Map:
		return reaches(t.Key(), seen) || reaches(t.Elem(), seen)
	case reflect.Interface:
		// What an interface holds is known only from a value: look.
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); isSensitive(f) || reaches(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// isSensitive reports whether f's tag marks it sensitive.
func isSensitive(f reflect.StructField) bool {
	tag, ok := f.Tag.Lookup(TagKey)
	if !ok {
		return false
	}
	for opt := range strings.SplitSeq(tag, ",") {
		if strings.TrimSpace(opt) == TagOption {
			return true
		}
	}
	return false
}

// collector gathers secrets.
type collector struct{ out []string }

// walk visits v. Under a sensitive field (all), every value is a secret;
// elsewhere only the fields typeOf lists are visited.
func (c *collector) walk(v reflect.Value, all bool, depth int) {
	if depth > maxDepth || !v.IsValid() {
		return
	}
	if !all && !typeOf(v.Type()).has {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			c.walk(v.Elem(), all, depth+1)
		}
	case reflect.Struct:
		if all {
			for i := range v.NumField() {
				c.walk(v.Field(i), true, depth+1)
			}
			return
		}
		for _, f := range typeOf(v.Type()).fields {
			c.walk(v.Field(f.index), f.sensitive, depth+1)
		}
	case reflect.Slice:
		if all && v.Type().Elem().Kind() == reflect.Uint8 {
			c.add(string(v.Bytes()))
			return
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			c.walk(v.Index(i), all, depth+1)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			c.walk(it.Key(), all, depth+1)
			c.walk(it.Value(), all, depth+1)
		}
	case reflect.String:
		if all {
			c.add(v.String())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if all && v.Int() != 0 {
			c.add(strconv.FormatInt(v.Int(), 10))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if all && v.Uint() != 0 {
			c.add(strconv.FormatUint(v.Uint(), 10))
		}
	case reflect.Float32, reflect.Float64:
		if all && v.Float() != 0 {
			c.add(strconv.FormatFloat(v.Float(), 'g', -1, v.Type().Bits()))
		}
	}
}

func (c *collector) add(s string) {
	if s != "" {
		c.out = append(c.out, s)
	}
}

// longestFirst orders secrets longest first, then as strings.
func longestFirst(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) }
