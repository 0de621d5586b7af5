// Package spans starts and ends the OpenTelemetry spans a driver makes: one
// per call of a step's action and one per call of an observer, and the
// event of a phase change on the reconcile's span. The driver's
// documentation lists their names and attributes.
package spans

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tendhq/tend/statemachine"
)

// Names of the tracer, spans and event; package driver exports them.
const (
	TracerName   = "github.com/tendhq/tend/driver"
	Step         = "tend.step"
	Observe      = "tend.observe"
	PhaseChanged = "tend.phase_changed"
)

// The attributes of the driver's spans; the package documentation lists them.
const (
	attrKey             = attribute.Key("tend.key")
	attrKind            = attribute.Key("tend.kind")
	attrState           = attribute.Key("tend.state")
	attrPhase           = attribute.Key("tend.phase")
	attrStep            = attribute.Key("tend.step.name")
	attrAttempt         = attribute.Key("tend.step.attempt")
	attrOutcome         = attribute.Key("tend.step.outcome")
	attrOperationID     = attribute.Key("tend.operation.id")
	attrCondition       = attribute.Key("tend.condition.name")
	attrConditionStatus = attribute.Key("tend.condition.status")
	attrConditionReason = attribute.Key("tend.condition.reason")
	attrFrom            = attribute.Key("tend.transition.from")
	attrTo              = attribute.Key("tend.transition.to")
)

// setError records err on span and sets its status to Error.
func setError(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Tracing is the tracing of a driver: its tracer and the names of the
// machine's states and phases, made once.
type Tracing[S, P comparable] struct {
	tracer trace.Tracer
	kind   attribute.KeyValue
	states map[S]string
	phases map[P]string
}

// New returns the tracing of a driver of kind governed by m, or
// nil (tracing off) when tp is nil.
func New[S, P comparable](tp trace.TracerProvider, kind string, m *statemachine.Machine[S, P]) *Tracing[S, P] {
	if tp == nil {
		return nil
	}
	t := &Tracing[S, P]{
		tracer: tp.Tracer(TracerName),
		kind:   attrKind.String(kind),
		states: make(map[S]string),
		phases: make(map[P]string),
	}
	for _, s := range m.States() {
		t.states[s] = fmt.Sprint(s)
	}
	for _, p := range m.Phases() {
		t.phases[p] = fmt.Sprint(p)
	}
	return t
}

// state returns the name of s.
func (t *Tracing[S, P]) state(s S) string {
	if name, ok := t.states[s]; ok {
		return name
	}
	return fmt.Sprint(s)
}

// phase returns the name of p.
func (t *Tracing[S, P]) phase(p P) string {
	if name, ok := t.phases[p]; ok {
		return name
	}
	return fmt.Sprint(p)
}

// StartStep starts the span of a call of the step dec names on the document
// under key.
func (t *Tracing[S, P]) StartStep(ctx context.Context, key string, dec statemachine.Decision[S, P]) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, Step, trace.WithAttributes(
		t.kind,
		attrKey.String(key),
		attrState.String(t.state(dec.Intent)),
		attrPhase.String(t.phase(dec.Phase)),
		attrStep.String(dec.Step),
		attrOperationID.String(dec.Operation.ID),
		attrAttempt.Int(dec.Operation.Attempts+1),
	))
}

// EndStep records a step's outcome on its span and ends it. A failed step's
// span has the status Error.
func EndStep(span trace.Span, out statemachine.Outcome, err error) {
	span.SetAttributes(attrOutcome.String(out.String()))
	if out == statemachine.Failed || out == statemachine.FailedTerminal {
		if err == nil {
			err = errors.New(out.String())
		}
		setError(span, err)
	}
	span.End()
}

// StartObserve starts the span of a call of the observer of condition on the
// document under key, in phase.
func (t *Tracing[S, P]) StartObserve(ctx context.Context, key string, phase P, condition string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, Observe, trace.WithAttributes(
		t.kind,
		attrKey.String(key),
		attrPhase.String(t.phase(phase)),
		attrCondition.String(condition),
	))
}

// EndObserve records an observation on its span and ends it.
func EndObserve(span trace.Span, status bool, reason string, err error) {
	if err != nil {
		setError(span, err)
	} else {
		span.SetAttributes(attrConditionStatus.Bool(status))
		if reason != "" {
			span.SetAttributes(attrConditionReason.String(reason))
		}
	}
	span.End()
}

// PhaseChanged adds the phase change from → to to the span in ctx, the
// reconcile's.
func (t *Tracing[S, P]) PhaseChanged(ctx context.Context, from, to P) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(PhaseChanged, trace.WithAttributes(
		attrFrom.String(t.phase(from)),
		attrTo.String(t.phase(to)),
	))
}
