package driver

import "github.com/tendhq/tend/driver/internal/spans"

// TracerName is the name of the tracer, the instrumentation scope, that a
// [Driver] asks its TracerProvider for.
const TracerName = spans.TracerName

// Names of the spans a [Driver] starts when it is given a TracerProvider,
// and of the event it adds to the reconcile's span. The package
// documentation lists their attributes.
const (
	// SpanStep is the span of one call of a step's action. Its context is
	// the one the step is given, so the spans a step starts from it are its
	// children.
	SpanStep = spans.Step
	// SpanObserve is the span of one call of an observer.
	SpanObserve = spans.Observe
	// EventPhaseChanged is the event a driver adds to the span of the
	// reconcile (the span in its context) when a status write changed the
	// document's phase.
	EventPhaseChanged = spans.PhaseChanged
)
