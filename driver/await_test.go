package driver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// awaitFunc waits for written as Driver.Await does.
type awaitFunc func(ctx context.Context, d *driver.Driver[gwSpec, gwStatus], written *gwObject) error

func await(ctx context.Context, d *driver.Driver[gwSpec, gwStatus], written *gwObject) error {
	return d.Await(ctx, written)
}

// awaitScenario creates a gateway whose Deployment takes 10 s to become
// available, waits for it to run, then stops it and waits again, with
// wait, through a driver over the store with plant around it (the
// controller's driver reads the store as it is). Each wait must return nil
// with the document settled at the intent written — never on the status
// the previous intent left — and within AwaitResync of settling. It
// returns the problems found.
func awaitScenario(t *testing.T, plant fault, wait awaitFunc) []string {
	var p problems
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = 10 * time.Second
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		waiter := f.driverWith(t, f.config(), plant)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		check := func(written *gwObject, phase gwPhase) {
			err := wait(ctx, waiter, written)
			returned := time.Now()
			obj := f.get(t, "gw")
			st := obj.Status
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				p.add("the wait for %v did not return in 10 minutes", written.Spec.State)
			case err != nil:
				p.add("the wait for %v: %v", written.Spec.State, err)
			case st.Phase != phase || st.ObservedGeneration < written.Generation:
				p.add("the wait for %v returned before the document settled: phase %v, observed generation %d of %d",
					written.Spec.State, st.Phase, st.ObservedGeneration, written.Generation)
			case returned.Sub(st.Since) > driver.AwaitResync+time.Second:
				p.add("the wait for %v returned %v after the document settled", written.Spec.State, returned.Sub(st.Since))
			}
		}
		created, err := d.Create(t.Context(), &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}})
		if err != nil {
			t.Fatal(err)
		}
		check(created, phStarted)
		// After a wait that returned early the controller may still be
		// writing statuses, each a conflict for the change of intent:
		// UpdateSpec's retries can all lose to one burst of them.
		stopIt := func(s *gwSpec) { s.State = gwStopped }
		written, err := d.UpdateSpec(t.Context(), "gw", stopIt)
		for errors.Is(err, store.ErrConflict) {
			written, err = d.UpdateSpec(t.Context(), "gw", stopIt)
		}
		if err != nil {
			t.Fatal(err)
		}
		check(written, phStopped)
	})
	return p.all()
}

// Await returns once the document settled at the intent written: not on
// the status the previous intent left, and not late.
func TestAwaitSettled(t *testing.T) {
	if p := awaitScenario(t, nil, await); len(p) > 0 {
		t.Fatal(strings.Join(p, "\n"))
	}
}

// Await neither hangs nor returns early with a watch that loses every
// event, or one that replays the events of earlier watches.
func TestAwaitSurvivesWatchFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant fault
	}{
		{"a watch losing every event", eventsLost},
		{"a watch replaying stale events", staleEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := awaitScenario(t, tc.plant, await); len(p) > 0 {
				t.Fatal(strings.Join(p, "\n"))
			}
		})
	}
}

// The scenario catches a wait that trusts the first change it sees, and one
// that trusts the events alone.
func TestAwaitScenarioFindsDefects(t *testing.T) {
	// firstChange returns at the first change of the document.
	firstChange := func(ctx context.Context, d *driver.Driver[gwSpec, gwStatus], written *gwObject) error {
		w, err := d.Collection().Backend().Watch(ctx, "ApiGateway", written.Revision)
		if err != nil {
			return err
		}
		defer w.Close()
		_, err = w.Next(ctx)
		return err
	}
	for _, tc := range []struct {
		name  string
		plant fault
		wait  awaitFunc
		want  string
	}{
		{"a wait on the first change", nil, firstChange, "returned before the document settled"},
		{"a wait on events alone, which are lost", eventsLost, firstChange, "did not return"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := awaitScenario(t, tc.plant, tc.wait)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Fatalf("the scenario did not report %q: %q", tc.want, p)
			}
		})
	}
}

// eventsLost loses every watch event.
func eventsLost(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, unseen: func(string, bool) bool { return true }}
}

// staleEvents replays, at the start of each watch, every event the watches
// before it delivered: the status of an earlier intent, settled.
func staleEvents(b store.Backend, _ *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &replayStore{Backend: b}
}

type replayStore struct {
	store.Backend
	mu   sync.Mutex // guards seen
	seen []store.Event
}

func (b *replayStore) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	w, err := b.Backend.Watch(ctx, kind, from)
	if err != nil {
		return w, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return &replayWatch{Watch: w, b: b, stale: slices.Clone(b.seen)}, nil
}

type replayWatch struct {
	store.Watch
	b     *replayStore
	stale []store.Event
}

func (w *replayWatch) Next(ctx context.Context) (store.Event, error) {
	if len(w.stale) > 0 {
		ev := w.stale[0]
		w.stale = w.stale[1:]
		return ev, nil
	}
	ev, err := w.Watch.Next(ctx)
	if err == nil {
		w.b.mu.Lock()
		w.b.seen = append(w.b.seen, ev)
		w.b.mu.Unlock()
	}
	return ev, err
}

// A document held in Fault ends the wait with the failure.
func TestAwaitFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step == "create_database" {
				return 0, controller.Terminal(errors.New("quota exceeded"))
			}
			return 0, nil
		}
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		created, err := d.Create(t.Context(), &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Await(t.Context(), created)
		var fe *sm.FaultError[gwState, gwPhase]
		if !errors.Is(err, sm.ErrHeldInFault) || !errors.As(err, &fe) || fe.Failure == nil || fe.Failure.Step != "create_database" ||
			fe.Phase != phFailed || fe.Intent != gwRunning || !strings.Contains(err.Error(), "quota exceeded") {
			t.Fatalf("Await: %v, want the failure of create_database in Failed", err)
		}
	})
}

// An intent the machine refuses ends the wait with the reason.
func TestAwaitRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		created, err := d.Create(t.Context(), &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Await(t.Context(), created); err != nil {
			t.Fatal(err)
		}
		// An intent the machine does not know, written past the driver's
		// admission.
		obj := f.get(t, "gw")
		obj.Spec.State = "Flying"
		written, err := f.coll.UpdateSpec(t.Context(), obj)
		if err != nil {
			t.Fatal(err)
		}
		err = d.Await(t.Context(), written)
		var re *sm.RefusalError[gwState, gwPhase]
		if !errors.Is(err, sm.ErrIntentRefused) || !errors.As(err, &re) || re.Intent != "Flying" || re.Phase != phStarted {
			t.Fatalf("Await: %v, want the intent Flying refused in Started", err)
		}
	})
}

// A document driven to its final pair is removed: the wait says so, as it
// does for a document deleted outright.
func TestAwaitRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		created, err := d.Create(t.Context(), &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Await(t.Context(), created); err != nil {
			t.Fatal(err)
		}
		written, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State = gwDeleted })
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Await(t.Context(), written); !errors.Is(err, driver.ErrRemoved) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Await: %v, want ErrRemoved", err)
		}
		if _, err := f.coll.Get(t.Context(), "gw"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the document is still there: %v", err)
		}
	})
}

// A wait that outlasts its context returns the context's error.
func TestAwaitContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = time.Hour
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		created, err := d.Create(t.Context(), &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		start := time.Now()
		if err := d.Await(ctx, created); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 90*time.Second {
			t.Fatalf("Await: %v after %v, want the context's deadline after 1m30s", err, time.Since(start))
		}
	})
}
