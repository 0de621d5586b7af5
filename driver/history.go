package driver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/redact"
	"github.com/tendhq/tend/redact/redactzap"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// driverHistory is where a driver records the history of its documents.
type driverHistory struct {
	rec  *history.Recorder
	kind string
}

// newDriverHistory returns the history of a driver of kind, or nil (no
// history) when rec is nil.
func newDriverHistory(rec *history.Recorder, kind string) *driverHistory {
	if rec == nil {
		return nil
	}
	return &driverHistory{rec: rec, kind: kind}
}

// record records e for the document meta describes, with the reconcile id
// and trace of ctx, its free text scrubbed of sc's secrets.
func (h *driverHistory) record(ctx context.Context, meta *store.Meta, sc *redact.Scrubber, e history.Entry) {
	e.ReconcileID = controller.ReconcileIDFrom(ctx)
	if ts, dropped := controller.TriggersFrom(ctx); len(ts) > 0 || dropped > 0 {
		e.Triggers = controller.TriggerStrings(ts, dropped)
	}
	if span := trace.SpanContextFromContext(ctx); span.HasTraceID() {
		e.TraceID = span.TraceID().String()
	}
	e.Reason, e.Error = sc.String(e.Reason), sc.String(e.Error)
	h.rec.Record(h.kind, meta.Key, meta.UID, e)
}

// scrubber returns the scrubber of the secrets obj holds (see package
// redact), nil when its types mark no field sensitive.
func (d *phaseDriver[Spec, Status, S, P]) scrubber(obj *store.Object[Spec, Status]) *redact.Scrubber {
	return redact.New(obj)
}

// redacting returns ctx and log for a pass over obj: when obj holds
// secrets, its logger (the one steps and observers log through) and log
// scrub them from every part of every entry (see package redactzap), and
// the scrubber is returned to scrub the pass's error.
func (d *phaseDriver[Spec, Status, S, P]) redacting(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status]) (context.Context, *zap.Logger, *redact.Scrubber) {
	sc := d.scrubber(obj)
	if sc == nil {
		return ctx, log, nil
	}
	ctx = controller.WithLogger(ctx, redactzap.Logger(controller.LoggerFrom(ctx), sc))
	log = redactzap.Logger(log, sc)
	return ctx, log, sc
}

// stepStarted records the start of a call of the step dec names, and
// returns when it started.
func (d *phaseDriver[Spec, Status, S, P]) stepStarted(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P]) time.Time {
	now := time.Now()
	d.history.record(ctx, &obj.Meta, nil, history.Entry{Time: now, Type: history.StepStarted,
		Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase), Step: dec.Step,
		Operation: dec.Operation.ID, Attempt: dec.Operation.Attempts + 1})
	return now
}

// stepEnded records the end of a call of the step dec names, begun at start.
func (d *phaseDriver[Spec, Status, S, P]) stepEnded(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P], start time.Time, out statemachine.Outcome, class string, err error) {
	now := time.Now()
	e := history.Entry{Time: now, Type: history.StepEnded, Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase),
		Step: dec.Step, Operation: dec.Operation.ID, Attempt: dec.Operation.Attempts + 1, Outcome: out.String(),
		Duration: now.Sub(start), ErrorClass: class}
	if err != nil {
		e.Error = err.Error()
	}
	d.history.record(ctx, &obj.Meta, d.scrubber(obj), e)
}

// recordStatus records what a status write changed, as report logs it: a
// refusal that began, an operation given up, a phase change.
func (d *phaseDriver[Spec, Status, S, P]) recordStatus(ctx context.Context, obj *store.Object[Spec, Status], intent S, read, next statemachine.Status[S, P], now time.Time) {
	if d.history == nil {
		return
	}
	sc := d.scrubber(obj)
	if r := next.Refused; r != nil && (read.Refused == nil || *read.Refused != *r) {
		d.history.record(ctx, &obj.Meta, sc, history.Entry{Time: now, Type: history.Refused,
			Intent: fmt.Sprint(r.Intent), Phase: fmt.Sprint(next.Phase), Reason: r.Reason})
	}
	if next.Phase == read.Phase {
		return
	}
	if f := next.Failure; f != nil && (read.Failure == nil || !read.Failure.At.Equal(f.At)) {
		d.history.record(ctx, &obj.Meta, sc, history.Entry{Time: now, Type: history.GaveUp,
			Phase: fmt.Sprint(f.Operation.Phase), To: fmt.Sprint(next.Phase), Step: f.Step,
			Operation: f.Operation.ID, Attempt: f.Operation.Attempts, Cause: string(f.Cause), Reason: f.Reason})
	}
	e := history.Entry{Time: now, Type: history.Transition, Intent: fmt.Sprint(intent),
		Phase: fmt.Sprint(read.Phase), To: fmt.Sprint(next.Phase)}
	if next.Operation != nil {
		e.Operation = next.Operation.ID
	}
	if !read.Since.IsZero() {
		e.Duration = now.Sub(read.Since)
	}
	d.history.record(ctx, &obj.Meta, sc, e)
}

// recordSettled records what a settled object begins without a change of
// intent, as settledMoves logs it: a drift repair, a timer.
func (d *phaseDriver[Spec, Status, S, P]) recordSettled(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P], st statemachine.Status[S, P]) {
	if d.history == nil {
		return
	}
	e := history.Entry{Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase)}
	switch {
	case len(dec.Drift) > 0:
		observed := make([]string, len(dec.Drift))
		for i, r := range dec.Drift {
			c, _ := st.Condition(r.Condition)
			observed[i] = fmt.Sprintf("%s=%t (%s)", r.Condition, c.Status, c.Reason)
		}
		e.Type, e.To, e.Reason = history.Drift, fmt.Sprint(dec.Next), strings.Join(observed, "; ")
	case dec.Request != "":
		return // recorded when its tokens are recorded served (see served)
	case dec.Timer != "":
		e.Type, e.Name = history.Timer, dec.Timer
	default:
		return
	}
	e.Time = time.Now()
	d.history.record(ctx, &obj.Meta, d.scrubber(obj), e)
}
