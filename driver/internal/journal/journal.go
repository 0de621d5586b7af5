package journal

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/redact"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Journal is where a driver records the history of its documents of one
// kind. A nil *Journal records nothing.
type Journal struct {
	rec  *history.Recorder
	kind string
}

// New returns the journal of a driver of kind, or nil (no history) when
// rec is nil.
func New(rec *history.Recorder, kind string) *Journal {
	if rec == nil {
		return nil
	}
	return &Journal{rec: rec, kind: kind}
}

// Record records e for the document meta describes, with the reconcile id
// and trace of ctx, its free text scrubbed of sc's secrets (sc may be nil).
func (j *Journal) Record(ctx context.Context, meta *store.Meta, sc *redact.Scrubber, e history.Entry) {
	if j == nil {
		return
	}
	e.ReconcileID = controller.ReconcileIDFrom(ctx)
	if ts, dropped := controller.TriggersFrom(ctx); len(ts) > 0 || dropped > 0 {
		e.Triggers = controller.TriggerStrings(ts, dropped)
	}
	if span := trace.SpanContextFromContext(ctx); span.HasTraceID() {
		e.TraceID = span.TraceID().String()
	}
	e.Reason, e.Error = sc.String(e.Reason), sc.String(e.Error)
	j.rec.Record(j.kind, meta.Key, meta.UID, e)
}

// StepStarted records in j the start of a call of the step dec names, on
// the document meta describes, and returns when it started.
func StepStarted[S, P comparable](ctx context.Context, j *Journal, meta *store.Meta, dec statemachine.Decision[S, P]) time.Time {
	now := time.Now()
	j.Record(ctx, meta, nil, history.Entry{Time: now, Type: history.StepStarted,
		Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase), Step: dec.Step,
		Operation: dec.Operation.ID, Attempt: dec.Operation.Attempts + 1})
	return now
}

// StepEnded records in j the end of a call of the step dec names, begun at
// start, with its outcome, its error's class and its error scrubbed of sc's
// secrets.
func StepEnded[S, P comparable](ctx context.Context, j *Journal, meta *store.Meta, sc *redact.Scrubber, dec statemachine.Decision[S, P], start time.Time, out statemachine.Outcome, class string, err error) {
	now := time.Now()
	e := history.Entry{Time: now, Type: history.StepEnded, Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase),
		Step: dec.Step, Operation: dec.Operation.ID, Attempt: dec.Operation.Attempts + 1, Outcome: out.String(),
		Duration: now.Sub(start), ErrorClass: class}
	if err != nil {
		e.Error = err.Error()
	}
	j.Record(ctx, meta, sc, e)
}

// Status records in j what a status write changed from read to next, the
// document's intent being intent: a refusal that began, an operation given
// up, a phase change.
func Status[S, P comparable](ctx context.Context, j *Journal, meta *store.Meta, sc *redact.Scrubber, intent S, read, next statemachine.Status[S, P], now time.Time) {
	if r := next.Refused; r != nil && (read.Refused == nil || *read.Refused != *r) {
		j.Record(ctx, meta, sc, history.Entry{Time: now, Type: history.Refused,
			Intent: fmt.Sprint(r.Intent), Phase: fmt.Sprint(next.Phase), Reason: r.Reason})
	}
	if next.Phase == read.Phase {
		return
	}
	if f := next.Failure; f != nil && (read.Failure == nil || !read.Failure.At.Equal(f.At)) {
		j.Record(ctx, meta, sc, history.Entry{Time: now, Type: history.GaveUp,
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
	j.Record(ctx, meta, sc, e)
}

// Settled returns the entry of what a settled document begins without a
// change of intent, decided by dec on its status st: a drift repair (with
// what was observed), a timer. It reports false when there is nothing to
// record: a request is recorded when its tokens are recorded served.
func Settled[S, P comparable](dec statemachine.Decision[S, P], st statemachine.Status[S, P]) (history.Entry, bool) {
	e := history.Entry{Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase)}
	switch {
	case len(dec.Drift) > 0:
		observed := make([]string, len(dec.Drift))
		for i, r := range dec.Drift {
			c, _ := st.Condition(r.Condition)
			observed[i] = fmt.Sprintf("%s=%t (%s)", r.Condition, c.Status, c.Reason)
		}
		e.Type, e.To, e.Reason = history.Drift, fmt.Sprint(dec.Next), strings.Join(observed, "; ")
	case dec.Timer != "" && dec.Request == "":
		e.Type, e.Name = history.Timer, dec.Timer
	default:
		return history.Entry{}, false
	}
	e.Time = time.Now()
	return e, true
}
