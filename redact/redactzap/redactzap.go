// Package redactzap keeps secrets out of every part of a zap log entry:
// the logger's name (and every name given with Named), the message, the
// caller, the stack, and each field's key, namespace and value, nested
// objects, arrays, reflected values and the verbose forms of errors
// included. It is the bridge between package redact, which finds secrets
// in text, and go.uber.org/zap; a program that imports redact alone
// imports neither zap nor this package.
//
// Wrap a logger before handing it to code that may log a secret:
//
//	log = redactzap.Logger(log, redact.New(spec))
//
// Every secret found is replaced by redact.Marker. Redaction is by value,
// as in package redact: a secret transformed on the way (encoded, hashed,
// split) is not found.
package redactzap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tendhq/tend/redact"
)

// Logger returns l writing every entry scrubbed of s's secrets (see
// [Core]). It returns l itself when s is nil (no secrets) or l is nil.
func Logger(l *zap.Logger, s *redact.Scrubber) *zap.Logger {
	if l == nil || s == nil {
		return l
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return Core(c, s) }))
}

// Core returns a core that writes to c every entry scrubbed of s's
// secrets: its logger name, message, caller (file and function) and
// stack, and the key and value of each field given to With or Write. A
// field that holds no secret reaches c as it was; one that does reaches
// it as the fields its rendering holds, keys and values scrubbed (an
// error's message, verbose form and causes each a field of its own, an
// object a map). Core returns c itself when s is nil.
func Core(c zapcore.Core, s *redact.Scrubber) zapcore.Core {
	if s == nil {
		return c
	}
	return &core{Core: c, s: s}
}

// core is a zapcore.Core that scrubs entries and fields.
type core struct {
	zapcore.Core
	s *redact.Scrubber
}

// With implements zapcore.Core.
func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{Core: c.Core.With(c.fields(fields)), s: c.s}
}

// Check implements zapcore.Core: when the wrapped core would write the
// entry (its level, its sampling), the entry is written through c, so
// that Write scrubs it.
func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Core.Check(e, nil) != nil {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write implements zapcore.Core.
func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.LoggerName = c.s.String(e.LoggerName)
	e.Message = c.s.String(e.Message)
	e.Stack = c.s.String(e.Stack)
	e.Caller.File = c.s.String(e.Caller.File)
	e.Caller.Function = c.s.String(e.Caller.Function)
	return c.Core.Write(e, c.fields(fields))
}

// fields returns fields scrubbed: fields itself when none holds a secret.
func (c *core) fields(fields []zapcore.Field) []zapcore.Field {
	var out []zapcore.Field // made at the first field that changes
	for i, f := range fields {
		scrubbed, changed := c.field(f)
		if !changed {
			if out != nil {
				out = append(out, f)
			}
			continue
		}
		if out == nil {
			out = append(make([]zapcore.Field, 0, len(fields)), fields[:i]...)
		}
		out = append(out, scrubbed...)
	}
	if out == nil {
		return fields
	}
	return out
}

// field returns f scrubbed, as one field or several, and whether it held a
// secret.
func (c *core) field(f zapcore.Field) ([]zapcore.Field, bool) {
	key := c.s.String(f.Key)
	switch f.Type {
	case zapcore.SkipType:
		return nil, false
	case zapcore.StringType:
		v := c.s.String(f.String)
		if key == f.Key && v == f.String {
			return nil, false
		}
		f.Key, f.String = key, v
		return []zapcore.Field{f}, true
	case zapcore.NamespaceType, zapcore.BoolType:
		if key == f.Key {
			return nil, false
		}
		f.Key = key
		return []zapcore.Field{f}, true
	}
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	changed := key != f.Key
	keys := make([]string, 0, len(enc.Fields))
	values := make(map[string]any, len(enc.Fields))
	for k, v := range enc.Fields {
		sv, ch := c.value(v)
		sk := c.s.String(k)
		changed = changed || ch || sk != k
		keys = append(keys, sk)
		values[sk] = sv
	}
	if !changed {
		return nil, false
	}
	slices.Sort(keys)
	out := make([]zapcore.Field, len(keys))
	for i, k := range keys {
		out[i] = zap.Any(k, values[k])
	}
	return out, true
}

// value returns v, a value a MapObjectEncoder holds, scrubbed, and
// whether it held a secret.
func (c *core) value(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, false
	case string:
		out := c.s.String(v)
		return out, out != v
	case []byte:
		out := c.s.String(string(v))
		if out == string(v) {
			return v, false
		}
		return out, true
	case map[string]any:
		out, changed := make(map[string]any, len(v)), false
		for k, x := range v {
			sx, ch := c.value(x)
			sk := c.s.String(k)
			changed = changed || ch || sk != k
			out[sk] = sx
		}
		return out, changed
	case []any:
		out, changed := make([]any, len(v)), false
		for i, x := range v {
			var ch bool
			out[i], ch = c.value(x)
			changed = changed || ch
		}
		return out, changed
	case json.Number:
		out := c.s.String(string(v))
		return out, out != string(v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64,
		complex64, complex128:
		text := fmt.Sprint(v)
		if out := c.s.String(text); out != text {
			return out, true
		}
		return v, false
	}
	return c.reflected(v)
}

// reflected returns a value zap renders by reflection (its JSON), scrubbed:
// v itself when its rendering holds no secret, else its rendering decoded
// with every key and text scrubbed.
func (c *core) reflected(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		text := fmt.Sprintf("%+v", v)
		if out := c.s.String(text); out != text {
			return out, true
		}
		return v, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var decoded any
	if err := dec.Decode(&decoded); err != nil {
		return v, false
	}
	out, changed := c.value(decoded)
	if !changed {
		return v, false
	}
	return out, true
}
