package controller

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the name of the tracer, the instrumentation scope, that a
// [Controller] asks its TracerProvider for.
const TracerName = "github.com/tendhq/tend/controller"

// SpanReconcile is the span of one reconcile of a key by a [Controller]
// given a TracerProvider; the package documentation lists its attributes.
const SpanReconcile = "tend.reconcile"

// The attributes of the reconcile span; the package documentation lists them.
const (
	attrController      = attribute.Key("tend.controller")
	attrKey             = attribute.Key("tend.key")
	attrReconcileID     = attribute.Key("tend.reconcile.id")
	attrReconcileResult = attribute.Key("tend.reconcile.result")
	// attrReconcileTriggers lists the reconcile's triggers (TriggerStrings).
	attrReconcileTriggers = attribute.Key("tend.reconcile.triggers")
)

// newTracer returns the package's tracer from tp, or nil (tracing off) when
// tp is nil.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}

// String returns the value of the tend.reconcile.result attribute: the
// result label's values of controller_runtime_reconcile_total, and
// terminal and panic for those errors.
func (o outcome) String() string {
	switch o {
	case outcomeSuccess:
		return resultSuccess
	case outcomeRequeueAfter:
		return resultRequeueAfter
	case outcomeTerminal:
		return "terminal"
	case outcomePanic:
		return "panic"
	}
	return resultError
}

// endReconcileSpan records a reconcile's result on its span and ends it.
func endReconcileSpan(span trace.Span, o outcome, err error) {
	span.SetAttributes(attrReconcileResult.String(o.String()))
	if err != nil {
		var p *panicError
		if errors.As(err, &p) {
			// The stack is in the log; the span says what panicked.
			setError(span, fmt.Errorf("reconciler panicked: %v", p.value))
		} else {
			setError(span, err)
		}
	}
	span.End()
}

// setError records err on span and sets its status to Error.
func setError(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
