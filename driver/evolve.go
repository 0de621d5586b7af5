package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// CheckCarried reads every document of the driver's kind from its store
// and returns an error matching statemachine.ErrStranded, a
// *statemachine.StrandedError, listing those the driver's machine cannot
// carry on (see [CheckDocuments]); nil when it can carry them all. A
// Manager (package manager) calls it before it runs the driver of a
// machine that differs from the one registered for the kind.
func (d *Driver[Spec, Status]) CheckCarried(ctx context.Context) error {
	return d.impl.checkCarried(ctx)
}

func (d *phaseDriver[Spec, Status, S, P]) checkCarried(ctx context.Context) error {
	stranded := &statemachine.StrandedError{Kind: d.c.Kind(), Machine: d.m.Name()}
	opts := store.ListOptions{}
	for {
		page, err := d.c.ListPage(ctx, opts)
		if err != nil {
			return fmt.Errorf("driver: checking the documents of %s: %w", d.c.Kind(), err)
		}
		for _, obj := range page.Items {
			if s := strandOf(d.m, obj); s != nil {
				stranded.Add(obj.Key, *s)
			}
		}
		if page.Continue == "" {
			return stranded.Err()
		}
		opts.Continue = page.Continue
	}
}

// CheckDocuments returns an error matching statemachine.ErrStranded, a
// *statemachine.StrandedError of kind, listing the documents of objs that
// machine m cannot carry on: those whose status [statemachine.Machine.Carry]
// strands, and those whose intent is neither a state of m nor one m
// retired (unless their status records that intent refused already). It
// returns nil when m can carry them all; a driver of m then carries each
// at its next reconcile.
func CheckDocuments[Spec HasIntent[S], Status any, S, P comparable](m *statemachine.Machine[S, P], kind string, objs []*store.Object[Spec, Status]) error {
	if _, ok := any(new(Status)).(HasMachineStatus[S, P]); !ok {
		return fmt.Errorf("%w: *%T holds no statemachine.Status[%T, %T]", ErrInvalidConfig, *new(Status), *new(S), *new(P))
	}
	stranded := &statemachine.StrandedError{Kind: kind, Machine: m.Name()}
	for _, obj := range objs {
		if s := strandOf(m, obj); s != nil {
			stranded.Add(obj.Key, *s)
		}
	}
	return stranded.Err()
}

// strandOf returns why m cannot carry obj on, or nil when it can.
func strandOf[Spec HasIntent[S], Status any, S, P comparable](m *statemachine.Machine[S, P], obj *store.Object[Spec, Status]) *statemachine.Strand {
	st := storedStatus(m, obj)
	intent := obj.Spec.Intent()
	_, strand := m.Carry(intent, st)
	if m.ValidateIntent(m.CarryIntent(intent)) != nil && (st.Refused == nil || st.Refused.Intent != intent) {
		if strand == nil {
			strand = &statemachine.Strand{State: fmt.Sprint(intent), Phase: fmt.Sprint(st.Phase)}
		}
		strand.Reasons = append(strand.Reasons, fmt.Sprintf("intent %v is not a state of the machine", intent))
	}
	return strand
}

// storedStatus returns the machine's part of obj's status as a driver of m
// reads it: a status never written is the machine's new status.
func storedStatus[Spec, Status any, S, P comparable](m *statemachine.Machine[S, P], obj *store.Object[Spec, Status]) statemachine.Status[S, P] {
	st := *machineStatusOf[S, P](&obj.Status)
	var zero P
	if st.Phase == zero {
		if _, ok := m.Spec(zero); !ok {
			// An operator may have paused it, or commanded it, already.
			ns := m.NewStatus()
			ns.Paused, ns.Commands = st.Paused, st.Commands
			return ns
		}
	}
	return st
}

// migrate carries the status of obj, as read into w, onto the machine
// before anything is decided on it: a status an earlier version of the
// machine wrote, which the machine's migrations change, is written
// carried, in one write conditional on the revision read, logged and
// recorded in history. A status the machine cannot carry ends the
// reconcile with a terminal error matching statemachine.ErrStranded, and
// nothing is written. A paused document is carried once it is resumed.
func (d *phaseDriver[Spec, Status, S, P]) migrate(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], w *unwritten[Status, S, P]) (turn, error) {
	read := w.stored
	if read.Paused != nil {
		return turnDecide, nil
	}
	carried, strand := d.m.Carry(obj.Spec.Intent(), read)
	if strand != nil {
		stranded := &statemachine.StrandedError{Kind: d.c.Kind(), Machine: d.m.Name()}
		stranded.Add(obj.Key, *strand)
		return turnEnd, controller.Terminal(stranded)
	}
	if carried.Equal(read) {
		return turnDecide, nil
	}
	*machineStatusOf[S, P](&obj.Status) = carried
	written, encoded, err := d.writeEncoded(ctx, obj)
	switch {
	case errors.Is(err, store.ErrConflict):
		return turnReread, err
	case errors.Is(err, store.ErrNotFound):
		d.gone(obj.Key)
		return turnEnd, nil
	case err != nil:
		return turnEnd, err
	}
	*w = unwritten[Status, S, P]{stored: d.machineStatus(written), status: written.Status, encoded: encoded, moves: w.moves[:0]}
	what := carriedChanges(read, carried)
	log.Info("status carried onto the machine", zap.String("key", obj.Key), zap.Int("version", d.m.Version()), zap.String("carried", what))
	if d.history != nil {
		d.history.Record(ctx, &obj.Meta, d.scrubber(obj), history.Entry{Time: time.Now(), Type: history.Migrated,
			Intent: fmt.Sprint(carried.Target), Phase: fmt.Sprint(read.Phase), To: fmt.Sprint(carried.Phase),
			Name: "v" + fmt.Sprint(d.m.Version()), Reason: what})
	}
	return turnDecide, nil
}

// carriedChanges describes what carrying changed from read to carried.
func carriedChanges[S, P comparable](read, carried statemachine.Status[S, P]) string {
	var out []string
	if read.Phase != carried.Phase {
		out = append(out, fmt.Sprintf("phase %v → %v", read.Phase, carried.Phase))
	}
	if read.Target != carried.Target {
		out = append(out, fmt.Sprintf("target %v → %v", read.Target, carried.Target))
	}
	if a, b := read.Operation, carried.Operation; a != nil && b != nil && !slices.Equal(a.Done, b.Done) {
		out = append(out, fmt.Sprintf("checkpoint of %s [%s] → [%s]", a.ID, strings.Join(a.Done, " "), strings.Join(b.Done, " ")))
	}
	if len(read.Requests) != len(carried.Requests) || len(read.Timers) != len(carried.Timers) {
		out = append(out, "requests and timers the machine no longer declares forgotten")
	}
	if len(out) == 0 {
		out = append(out, "records of earlier operations renamed")
	}
	return strings.Join(out, "; ")
}
