package driver

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver/internal/journal"
	"github.com/tendhq/tend/redact"
	"github.com/tendhq/tend/redact/redactzap"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

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

// recordStatus records what a status write changed, as report logs it: a
// refusal that began, an operation given up, a phase change.
func (d *phaseDriver[Spec, Status, S, P]) recordStatus(ctx context.Context, obj *store.Object[Spec, Status], intent S, read, next statemachine.Status[S, P], now time.Time) {
	if d.history != nil {
		journal.Status(ctx, d.history, &obj.Meta, d.scrubber(obj), intent, read, next, now)
	}
}

// recordSettled records what a settled object begins without a change of
// intent, as settledMoves logs it: a drift repair, a timer.
func (d *phaseDriver[Spec, Status, S, P]) recordSettled(ctx context.Context, obj *store.Object[Spec, Status], dec statemachine.Decision[S, P], st statemachine.Status[S, P]) {
	if d.history == nil {
		return
	}
	if e, ok := journal.Settled(dec, st); ok {
		d.history.Record(ctx, &obj.Meta, d.scrubber(obj), e)
	}
}
