package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"

	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// The documents of the tests are widgets, driven by a machine the command
// was not compiled with: it knows it only from the store.
const widgetKind = "Widget"

// testKinds are the kinds a test store is configured with.
var testKinds = []string{registry.Kind, widgetKind, history.KindFor(widgetKind)}

type widgetSpec struct {
	State string `json:"state"`
}

func (s widgetSpec) Intent() string { return s.State }

type widgetStatus struct {
	statemachine.Status[string, string]
}

// widgetMachine creates widgets in two steps, allocate and configure, and
// deletes them in one; a failure moves a widget to Fault.
func widgetMachine(t testing.TB) *statemachine.Machine[string, string] {
	t.Helper()
	m, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Widget",
		States:  []string{"Up", "Down", "Gone"},
		Initial: "Absent",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Absent"},
			{Phase: "Creating", Type: statemachine.Transitional, Steps: []string{"allocate", "configure"},
				Completion: []statemachine.Require{statemachine.Is("ready")}, Then: "Ready",
				Bounds: statemachine.Bounds{Deadline: time.Hour, MaxAttempts: 5}, FailTo: "Fault"},
			{Phase: "Ready"},
			{Phase: "Deleting", Type: statemachine.Transitional, Steps: []string{"release"},
				Completion: []statemachine.Require{statemachine.Not("ready")}, Then: "Absent",
				Bounds: statemachine.Bounds{Deadline: time.Hour, MaxAttempts: 5}, FailTo: "Fault"},
			{Phase: "Fault", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Up", Phase: "Ready"}, {State: "Down", Phase: "Absent"},
			{State: "Gone", Phase: "Absent", Final: true}},
		Rules: []statemachine.Rule[string, string]{
			{State: "Up", Phase: "Absent", Begin: "Creating"},
			{State: "Down", Phase: "Ready", Begin: "Deleting"},
			{State: "Down", Phase: "Fault", Begin: "Deleting"},
			{State: "Gone", Phase: "Ready", Begin: "Deleting"},
			{State: "Gone", Phase: "Fault", Begin: "Deleting"},
		},
		Requests: []statemachine.RequestRule[string]{{Name: "rebuild", Serve: []statemachine.Edge[string]{{From: "Ready", To: "Creating"}},
			Refuse: []string{"Absent"}, Reason: "nothing to rebuild"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// widgets are the documents a controller run leaves, by key, with the
// phase each ends in.
var widgets = []struct {
	key, state, phase string
	labels            map[string]string
}{
	{"w-ready", "Up", "Ready", map[string]string{"team": "a"}},
	{"w-down", "Down", "Absent", map[string]string{"team": "b"}},
	{"w-failing", "Up", "Creating", map[string]string{"team": "a"}}, // configure fails, retried in an hour
	{"w-fault", "Up", "Fault", map[string]string{"team": "b"}},      // configure fails terminally
}

// configure is the configure step's behaviour per key.
func configure(key string) error {
	switch key {
	case "w-failing":
		return errors.New("disk full")
	case "w-fault":
		return controller.Terminal(errors.New("bad configuration"))
	}
	return nil
}

// controllerRun is a controller driving widgets, under a manager that
// records the machine and holds the kind's presence lease, as in production.
type controllerRun struct {
	rec  *history.Recorder
	stop func()
}

// startController starts a controller on b. With recorder, the history
// recorder writes as the controller goes; without, entries wait for
// Flush.
func startController(t testing.TB, b store.Backend, recorder bool) *controllerRun {
	t.Helper()
	rec, err := history.NewRecorder(b, history.RecorderConfig{Replica: "test", FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Store: b, Identity: "test"})
	if err != nil {
		t.Fatal(err)
	}
	done := func(context.Context, *store.Object[widgetSpec, widgetStatus], string) error { return nil }
	_, err = manager.Drive[widgetSpec, widgetStatus](mgr, widgetMachine(t).Definition()).Named("widgets").
		Steps(driver.Do("allocate", done), driver.Do("release", done),
			driver.Do("configure", func(_ context.Context, w *store.Object[widgetSpec, widgetStatus], _ string) error {
				return configure(w.Key)
			})).
		Conditions(driver.Observe("ready", func(_ context.Context, w *store.Object[widgetSpec, widgetStatus]) (bool, string, error) {
			return w.Status.Phase == "Creating", "configured", nil
		})).
		// The recorder is this test's to run (or not: see recorder).
		WithDriver(driver.Config[widgetSpec, widgetStatus]{
			Backoff: workqueue.BackoffFunc(func(int) time.Duration { return time.Hour }),
			History: rec,
		}).
		Complete()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return mgr.Run(ctx) })
	if recorder {
		g.Go(func() error { return rec.Run(ctx) })
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return &controllerRun{rec: rec, stop: stop}
}

// produce runs a controller on b until every widget has reached its phase,
// then stops it: the documents, their histories and the machine's
// registration are what a real controller writes.
func produce(t testing.TB, b store.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := startController(t, b, false)
	coll, err := store.NewCollection[widgetSpec, widgetStatus](b, widgetKind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range widgets {
		if _, err := coll.Create(ctx, &store.Object[widgetSpec, widgetStatus]{
			Meta: store.Meta{Key: w.key, Labels: w.labels}, Spec: widgetSpec{State: w.state},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range widgets {
		for {
			obj, err := coll.Get(ctx, w.key)
			if err != nil {
				t.Fatal(err)
			}
			st := obj.Status.Status
			if st.Phase == w.phase && (w.key != "w-failing" || st.Operation != nil && st.Operation.Attempts > 0) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s stayed in %s (%+v)", w.key, st.Phase, st)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	// The manager records the machine beside its controllers as it starts,
	// not before them: wait for it before stopping.
	for {
		if _, err := b.Get(ctx, registry.Kind, widgetKind); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the manager did not record the machine")
		case <-time.After(10 * time.Millisecond):
		}
	}
	run.stop()
	// The recorder writes once the controller has stopped, so that every
	// entry is written whatever the timing (a write in flight when its
	// Run is cancelled drops its entries).
	if n := run.rec.Flush(ctx); n > 0 {
		t.Fatalf("the history recorder dropped %d entries", n)
	}
}
