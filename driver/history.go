package driver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/redact"
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
// secrets, its logger and log scrub them from every line, and the scrubber
// is returned to scrub the pass's error.
func (d *phaseDriver[Spec, Status, S, P]) redacting(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status]) (context.Context, *zap.Logger, *redact.Scrubber) {
	sc := d.scrubber(obj)
	if sc == nil {
		return ctx, log, nil
	}
	ctx = controller.WithLogger(ctx, scrubLogger(controller.LoggerFrom(ctx), sc))
	log = scrubLogger(log, sc)
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
func (d *phaseDriver[Spec, Status, S, P]) stepEnded(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P], start time.Time, out statemachine.Outcome, err error) {
	now := time.Now()
	e := history.Entry{Time: now, Type: history.StepEnded, Intent: fmt.Sprint(dec.Intent), Phase: fmt.Sprint(dec.Phase),
		Step: dec.Step, Operation: dec.Operation.ID, Attempt: dec.Operation.Attempts + 1, Outcome: out.String(),
		Duration: now.Sub(start)}
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
// intent, as settledMoves logs it: a drift repair, a request, a timer.
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
		e.Type, e.Name, e.Outcome, e.Reason = history.Request, dec.Request, "served", dec.RequestRefused
		switch {
		case dec.RequestRefused != "":
			e.Outcome = "refused"
		case dec.Action == statemachine.Nothing:
			e.Outcome = "moot"
		}
	case dec.Timer != "":
		e.Type, e.Name = history.Timer, dec.Timer
	default:
		return
	}
	e.Time = time.Now()
	d.history.record(ctx, &obj.Meta, d.scrubber(obj), e)
}

// scrubLogger returns l with every line scrubbed of sc's secrets: the
// message and each field, as the encoder would render it.
func scrubLogger(l *zap.Logger, sc *redact.Scrubber) *zap.Logger {
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return &scrubCore{Core: c, sc: sc} }))
}

// scrubCore is a zapcore.Core that scrubs secrets from entries and fields.
type scrubCore struct {
	zapcore.Core
	sc *redact.Scrubber
}

func (c *scrubCore) With(fields []zapcore.Field) zapcore.Core {
	return &scrubCore{Core: c.Core.With(c.fields(fields)), sc: c.sc}
}

func (c *scrubCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *scrubCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = c.sc.String(e.Message)
	e.Stack = c.sc.String(e.Stack)
	return c.Core.Write(e, c.fields(fields))
}

// fields returns fields scrubbed: a field whose rendering holds a secret
// becomes a string field of the rendering scrubbed.
func (c *scrubCore) fields(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		out[i] = c.field(f)
	}
	return out
}

func (c *scrubCore) field(f zapcore.Field) zapcore.Field {
	switch f.Type {
	case zapcore.StringType:
		f.String = c.sc.String(f.String)
		return f
	case zapcore.SkipType, zapcore.NamespaceType, zapcore.BoolType:
		return f
	case zapcore.ErrorType:
		if err, ok := f.Interface.(error); ok {
			return zap.String(f.Key, c.sc.String(err.Error()))
		}
	}
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	text := fmt.Sprint(enc.Fields[f.Key])
	if out := c.sc.String(text); out != text {
		return zap.String(f.Key, out)
	}
	return f
}
