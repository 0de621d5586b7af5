package driver_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// withCreatingAbort declares that intent Deleted aborts Creating.
func withCreatingAbort(d *sm.Definition[gwState, gwPhase]) {
	d.Aborts = append(d.Aborts, sm.AbortRule[gwState, gwPhase]{State: gwDeleted, Phase: phCreating, To: phDeleting})
}

// A gateway created with intent Deleted, whose machine aborts Creating for
// that intent, runs none of Creating's steps: the initial operation is
// aborted before its first step, and the document is removed.
func TestDriverCreateAbortsInitialOperation(t *testing.T) {
	f := newGWFixture(t)
	f.edit(t, withCreatingAbort)
	d := f.driver(t, f.config())
	f.create(t, "gw", gwDeleted)
	settle(t, d, "gw")
	if _, err := f.coll.Get(context.Background(), "gw"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the gateway is not removed: %v", err)
	}
	runs := f.world.stepsRun("gw")
	if slices.ContainsFunc(runs, func(s string) bool { return slices.Contains(creatingSteps, s) }) {
		t.Fatalf("steps %v: Creating ran, though intent Deleted aborts it", runs)
	}
	if !slices.Equal(runs, deletingSteps) {
		t.Fatalf("steps %v, want Deleting's %v", runs, deletingSteps)
	}
}

// The same, with the driver killed at every point (before and after each
// status write and each step's effect) and restarted: no crash lets a step
// of Creating run.
func TestDriverCreateAbortCrash(t *testing.T) {
	for at := 1; ; at++ {
		cp := &crashPoints{at: at}
		mem := newGWFixture(t).mem
		cb := &crashBackend{Backend: mem, points: cp}
		f := newGWFixtureOn(t, mem, cb)
		cb.coll = f.coll
		f.edit(t, withCreatingAbort)
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			cp.point("before the effect of %s", r.step)
			return 0, nil
		}
		f.world.after = func(r stepRun) { cp.point("after the effect of %s", r.step) }
		cfg := f.config()
		f.create(t, "gw", gwDeleted)
		crashes := 0
		for settled := false; !settled; {
			d := f.driver(t, cfg) // a fresh process after each crash
			done := make(chan bool)
			cp.crashed = false
			go func() {
				ok := false
				defer func() { done <- ok }()
				settle(t, d, "gw")
				ok = true
			}()
			if settled = <-done; !settled {
				if !cp.crashed {
					t.Fatalf("crash at %d: the reconcile failed", at)
				}
				crashes++
			}
		}
		runs := f.world.stepsRun("gw")
		if slices.ContainsFunc(runs, func(s string) bool { return slices.Contains(creatingSteps, s) }) {
			t.Errorf("crash at %d: steps %v: Creating ran", at, runs)
		}
		if _, err := mem.Get(context.Background(), "ApiGateway", "gw"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("crash at %d: the gateway is not removed: %v", at, err)
		}
		if crashes == 0 {
			if at <= 2*len(deletingSteps) {
				t.Fatalf("only %d crash points", at-1)
			}
			t.Logf("crashed at each of %d points: %v", at-1, cp.names)
			return
		}
	}
}
