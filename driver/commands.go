package driver

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/driver/internal/echoes"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// commands carries out the operator commands of read, obj's machine status
// as read (see statemachine.Machine.ApplyCommands), in one write of their
// effects and their removal. It returns the object as written with
// turnDecide, what the reconcile ends with, or nil and turnDecide when there
// was nothing to carry out (a request command waits for its token to be
// served, and is removed by the write that records it served).
func (d *phaseDriver[Spec, Status, S, P]) commands(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P], read statemachine.Status[S, P]) (*store.Object[Spec, Status], turn, error) {
	now := time.Now()
	intent := d.intent(obj)
	next, outcomes := d.m.ApplyCommands(intent, read, now)
	if len(outcomes) == 0 {
		return nil, turnDecide, nil
	}
	*machineStatusOf[S, P](&obj.Status) = next
	w.moves = append(w.moves, move[S, P]{intent: intent, read: read, next: next, now: now, commands: outcomes})
	written, p, err := d.flush(ctx, log, obj, w)
	return written, p, err
}

// commanded logs, counts and records in the document's history what became
// of operator commands, once the write that carried them out is stored.
func (d *phaseDriver[Spec, Status, S, P]) commanded(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], outcomes []statemachine.CommandOutcome, now time.Time) {
	for _, o := range outcomes {
		result := "applied"
		if !o.Applied {
			result = "refused"
		}
		d.metrics.Command(o.Command.Verb, result)
		if ce := log.Check(zap.InfoLevel, "operator command "+result); ce != nil {
			fields := []zap.Field{zap.String("key", obj.Key), zap.String("command", o.Command.ID),
				zap.String("verb", string(o.Command.Verb)), zap.String("by", o.Command.By), zap.String("phase", o.Phase)}
			if o.To != "" {
				fields = append(fields, zap.String("to", o.To))
			}
			if o.Reason != "" {
				fields = append(fields, zap.String("reason", o.Reason))
			}
			ce.Write(fields...)
		}
		if d.history != nil {
			d.history.Record(ctx, &obj.Meta, d.scrubber(obj), history.Entry{ID: history.OutcomeID(o.Command.ID), Time: now, Type: history.Operator,
				Name: string(o.Command.Verb), Command: o.Command.ID, Actor: o.Command.By, Outcome: result,
				Reason: o.Reason, Phase: o.Phase, To: o.To, Operation: o.Operation, Step: o.Step})
		}
	}
}

// ownWrites returns what the driver knows of its own writes, which its
// source does not queue.
func (d *phaseDriver[Spec, Status, S, P]) ownWrites() *echoes.Tracker { return &d.echoes }
