package driver_test

import (
	"context"
	"encoding/binary"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// spanRecorder is an in-memory trace.TracerProvider: it records every span its
// tracers start. It embeds the API's embedded interfaces, so a method added
// to the API fails this file's build instead of panicking at run time.
type spanRecorder struct {
	embedded.TracerProvider

	// mu guards spans, next and every field of the spans marked so.
	mu    sync.Mutex
	spans []*recSpan // in start order
	next  uint64     // the last span id given out
}

var _ trace.TracerProvider = (*spanRecorder)(nil)

// Tracer implements trace.TracerProvider.
func (r *spanRecorder) Tracer(name string, _ ...trace.TracerOption) trace.Tracer {
	return &recTracer{r: r, scope: name}
}

// recorded is a span as a test reads it.
type recorded struct {
	Scope, Name string
	SpanContext trace.SpanContext
	Parent      trace.SpanContext // invalid for a root span
	Attrs       map[attribute.Key]attribute.Value
	Events      []recEvent
	Status      codes.Code
	Description string
	Ended       bool
}

// recEvent is an event added to a span.
type recEvent struct {
	Name  string
	Attrs map[attribute.Key]attribute.Value
}

// all returns every span started so far, in start order.
func (r *spanRecorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]recorded, len(r.spans))
	for i, s := range r.spans {
		out[i] = recorded{Scope: s.scope, Name: s.name, SpanContext: s.sc, Parent: s.parent, Attrs: attrMap(s.attrs),
			Events: append([]recEvent(nil), s.events...), Status: s.status, Description: s.desc, Ended: s.ended}
	}
	return out
}

// named returns the spans called name, in start order.
func (r *spanRecorder) named(name string) []recorded {
	var out []recorded
	for _, s := range r.all() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of the attribute key of s as a string ("" when s
// has none).
func (s recorded) attr(key string) string {
	v, ok := s.Attrs[attribute.Key(key)]
	if !ok {
		return ""
	}
	return v.Emit()
}

// childOf reports whether s's parent is p.
func (s recorded) childOf(p recorded) bool {
	return s.Parent.IsValid() && s.Parent.SpanID() == p.SpanContext.SpanID() && s.Parent.TraceID() == p.SpanContext.TraceID()
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

type recTracer struct {
	embedded.Tracer
	r     *spanRecorder
	scope string
}

// Start implements trace.Tracer: the span's parent is the span of ctx, if
// any, and its trace that parent's.
func (t *recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	if cfg.NewRoot() {
		parent = trace.SpanContext{}
	}
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], r.next)
	tid := parent.TraceID()
	if !parent.IsValid() {
		tid = trace.TraceID{}
		binary.BigEndian.PutUint64(tid[8:], r.next)
	}
	s := &recSpan{r: r, scope: t.scope, name: name, parent: parent,
		sc:    trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		attrs: append([]attribute.KeyValue(nil), cfg.Attributes()...)}
	r.spans = append(r.spans, s)
	return trace.ContextWithSpan(ctx, s), s
}

type recSpan struct {
	embedded.Span
	r           *spanRecorder
	scope, name string
	sc, parent  trace.SpanContext

	// Guarded by r.mu:
	attrs  []attribute.KeyValue
	events []recEvent
	status codes.Code
	desc   string
	ended  bool
}

func (s *recSpan) End(...trace.SpanEndOption) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.ended = true
}

func (s *recSpan) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if !s.ended {
		s.events = append(s.events, recEvent{Name: name, Attrs: attrMap(cfg.Attributes())})
	}
}

func (s *recSpan) AddLink(trace.Link) {}

func (s *recSpan) IsRecording() bool {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return !s.ended
}

// RecordError records err as the SDK does: an event called "exception".
func (s *recSpan) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	s.AddEvent("exception", append(opts, trace.WithAttributes(attribute.String("exception.message", err.Error())))...)
}

func (s *recSpan) SpanContext() trace.SpanContext { return s.sc }

func (s *recSpan) SetStatus(code codes.Code, description string) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.ended || code < s.status { // Ok wins over Error, Error over Unset
		return
	}
	s.status, s.desc = code, ""
	if code == codes.Error {
		s.desc = description
	}
}

func (s *recSpan) SetName(name string) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.name = name
}

func (s *recSpan) SetAttributes(kvs ...attribute.KeyValue) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if !s.ended {
		s.attrs = append(s.attrs, kvs...)
	}
}

func (s *recSpan) TracerProvider() trace.TracerProvider { return s.r }
