package drivertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

type liftSpec struct{ State string }

func (s liftSpec) Intent() string { return s.State }

type liftStatus struct{ sm.Status[string, string] }

// liftConfig is a lift that must be down before it is sealed: its seal
// step fails while it is up. An operator who skips a failed lower step
// without lowering it, then moves the document out of Fault to Lowered,
// leaves it up for good, and every seal fails. sealing bounds the Sealing
// phase (zero: unbounded); w is the lift.
func liftConfig(t *testing.T, sealing time.Duration, w *lift) Config[liftSpec, liftStatus, string, string] {
	t.Helper()
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "Lift",
		States:  []string{"up", "down", "sealed"},
		Initial: "Lowered",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Raising", Type: sm.Transitional, Then: "Raised", Steps: []string{"raise"},
				Completion: []sm.Require{sm.Is("up")}},
			{Phase: "Raised"},
			{Phase: "Lowering", Type: sm.Transitional, Then: "Lowered", Steps: []string{"lower"},
				Completion: []sm.Require{sm.Not("up")}, Bounds: sm.Bounds{Deadline: time.Hour}},
			{Phase: "Lowered"},
			{Phase: "Sealing", Type: sm.Transitional, Then: "Sealed", Steps: []string{"seal"},
				Completion: []sm.Require{sm.Is("sealed")}, Bounds: sm.Bounds{Deadline: sealing}, Unbounded: sealing == 0},
			{Phase: "Sealed"},
			{Phase: "Stuck", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{
			{State: "up", Phase: "Raised"}, {State: "down", Phase: "Lowered"}, {State: "sealed", Phase: "Sealed"},
		},
		Rules: []sm.Rule[string, string]{
			{State: "up", Phase: "Lowered", Begin: "Raising"},
			{State: "down", Phase: "Raised", Begin: "Lowering"},
			{State: "sealed", Phase: "Raised", Begin: "Lowering"},
			{State: "sealed", Phase: "Lowered", Begin: "Sealing"},
		},
		Refusals: []sm.RefusalRule[string, string]{
			{States: []string{"up", "down"}, Phases: []string{"Sealing", "Sealed"}, Reason: "a sealed lift stays sealed"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return Config[liftSpec, liftStatus, string, string]{Machine: m, Kind: "Lift", Operators: true,
		Fixture: func(Env) (Fixture[liftSpec, liftStatus], error) {
			do := func(f func() error) driver.StepFunc[liftSpec, liftStatus] {
				return func(context.Context, *store.Object[liftSpec, liftStatus], string) (sm.Outcome, error) {
					w.mu.Lock()
					defer w.mu.Unlock()
					if err := f(); err != nil {
						return sm.Failed, err
					}
					return sm.Done, nil
				}
			}
			read := func(v *bool) driver.ObserverFunc[liftSpec, liftStatus] {
				return func(context.Context, *store.Object[liftSpec, liftStatus]) (bool, string, error) {
					w.mu.Lock()
					defer w.mu.Unlock()
					return *v, "", nil
				}
			}
			return Fixture[liftSpec, liftStatus]{Driver: driver.Config[liftSpec, liftStatus]{
				Steps: map[string]driver.StepFunc[liftSpec, liftStatus]{
					"raise": do(func() error { w.up = true; return nil }),
					"lower": do(func() error { w.up = false; return nil }),
					"seal": do(func() error {
						w.seals++
						if w.up {
							return errors.New("the lift is up")
						}
						w.sealed = true
						return nil
					}),
				},
				Observers: map[string]driver.ObserverFunc[liftSpec, liftStatus]{"up": read(&w.up), "sealed": read(&w.sealed)},
			}, Invariant: func(_ context.Context, _ string, obj *store.Object[liftSpec, liftStatus]) error {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.checked = obj.Status.Phase
				return nil
			}}, nil
		},
		SetIntent: func(s *liftSpec, st string) { s.State = st },
	}
}

// lift is the world of liftConfig.
type lift struct {
	mu         sync.Mutex
	up, sealed bool
	seals      int    // calls of the seal step
	checked    string // the phase the last check of the world saw
}

// What an operator tells the machine of the world the harness cannot
// check. The lift is raised, then to be sealed; its lower step fails once,
// an operator skips it, and, each time the document is held in Fault,
// moves it to Lowered (twice): the lift stays up, and every seal fails.
// Once an operator has skipped a step whose effect never happened, a
// document that never settles is logged, not failed. And an operator's
// answer after faults stopped is a change: the document has the whole
// horizon from it to settle, here to reach Fault again when Sealing's
// second deadline passes, later than the horizon counted from the end of
// the faults; the world is checked at the end, with the document held.
func TestOperatorToldWhatIsNot(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sealing time.Duration
		end     string // the phase the world's last check sees
	}{
		{name: "sealing never completes", end: "Lowering"}, // never settled: the last check came after the last action
		{name: "sealing reaches its deadline after the horizon", sealing: 2 * time.Hour, end: "Stuck"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &lift{}
			cfg, err := liftConfig(t, tt.sealing, w).validate()
			if err != nil {
				t.Fatal(err)
			}
			f, _ := execute(t, cfg, plan[string]{first: "up", actions: []action[string]{
				{kind: doStart},
				{kind: doSleep, d: time.Minute},
				{kind: doFail, name: "lower"},
				{kind: doIntent, intent: "sealed"},
				{kind: doSkip},
				{kind: doMove, name: "Lowered"},
				{kind: doMove, name: "Lowered"},
			}})
			if f != nil {
				t.Fatalf("%v", f)
			}
			if !w.up || w.sealed || w.seals < 2 || w.checked != tt.end {
				t.Fatalf("up %t, sealed %t, %d calls of seal, the world last checked in phase %q; want the lift up, never sealed, seal called more than once, the last check in %q",
					w.up, w.sealed, w.seals, w.checked, tt.end)
			}
			t.Logf("seal called %d times", w.seals)
		})
	}
}

// Only an operator's command written restarts the horizon. An answer
// chosen on the status a replica wrote may find the document changed
// since, and wait again (as a paged operator does) for the next such
// write: counted as a change, it would put the end off for ever.
func TestAnswerNotWrittenKeepsHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := accountingRun(t)
		r.create("on", false)
		r.cfg.Horizon = 2 * time.Hour
		settleBy := time.Now().Add(time.Hour)
		r.settleBy = settleBy
		failing := &store.Object[onSpec, onStatus]{}
		failing.Key = key
		failing.Status.Phase = "Making"
		failing.Status.Operation = &sm.Operation[string]{ID: "op", Phase: "Making", Attempts: 1}
		r.armed = []action[string]{{kind: doRetry}}
		time.Sleep(time.Minute)
		r.answer(failing) // the document stored has no step failing
		if len(r.armed) != 1 || !r.settleBy.Equal(settleBy) {
			t.Fatalf("an answer not written: %d commands armed, the horizon's end moved by %v; want the retry armed again and the end kept",
				len(r.armed), r.settleBy.Sub(settleBy))
		}
		if !r.editStatus(func(ms *sm.Status[string, string]) bool {
			ms.Phase, ms.Operation = failing.Status.Phase, failing.Status.Operation
			return true
		}) {
			t.Fatal("the failing status was not written")
		}
		r.answer(failing)
		if len(r.armed) != 0 || !r.settleBy.Equal(time.Now().Add(r.cfg.Horizon)) {
			t.Fatalf("an answer written: %d commands armed, horizon ends %v from now; want none armed and the whole horizon %v",
				len(r.armed), time.Until(r.settleBy), r.cfg.Horizon)
		}
	})
}
