package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/operator"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// The documents of the tests are widgets, driven by a machine the command
// was not compiled with: it knows it only from the store.
const widgetKind = "Widget"

// testKinds are the kinds a test store is configured with.
var testKinds = []string{operator.MachinesKind, widgetKind, history.Kind(widgetKind)}

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
			{Phase: "Creating", Kind: statemachine.Transitional, Steps: []string{"allocate", "configure"},
				Completion: []statemachine.Require{statemachine.Is("ready")}, Then: "Ready",
				Bounds: statemachine.Bounds{Deadline: time.Hour, MaxAttempts: 5}, FailTo: "Fault"},
			{Phase: "Ready"},
			{Phase: "Deleting", Kind: statemachine.Transitional, Steps: []string{"release"},
				Completion: []statemachine.Require{statemachine.Not("ready")}, Then: "Absent",
				Bounds: statemachine.Bounds{Deadline: time.Hour, MaxAttempts: 5}, FailTo: "Fault"},
			{Phase: "Fault", Kind: statemachine.Fault},
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
		Requests: []statemachine.RequestRule[string]{{Name: "rebuild", Serve: []statemachine.Edge[string]{{From: "Ready", To: "Creating"}}}},
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

// produce runs a controller on b until every widget has reached its phase,
// then stops it: the documents, their histories and the machine's
// registration are what a real controller writes.
func produce(t testing.TB, b store.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := widgetMachine(t)
	coll, err := store.NewCollection[widgetSpec, widgetStatus](b, widgetKind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.NewRecorder(b, history.RecorderConfig{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	done := func(context.Context, *store.Object[widgetSpec, widgetStatus], string) (statemachine.Outcome, error) {
		return statemachine.Done, nil
	}
	driver, err := controller.NewDriver(coll, m, controller.DriverConfig[widgetSpec, widgetStatus]{
		Steps: map[string]controller.Step[widgetSpec, widgetStatus]{
			"allocate": done,
			"configure": func(_ context.Context, w *store.Object[widgetSpec, widgetStatus], _ string) (statemachine.Outcome, error) {
				if err := configure(w.Key); err != nil {
					return statemachine.Failed, err
				}
				return statemachine.Done, nil
			},
			"release": done,
		},
		Observers: map[string]controller.Observer[widgetSpec, widgetStatus]{
			"ready": func(_ context.Context, w *store.Object[widgetSpec, widgetStatus]) (bool, string, error) {
				return w.Status.Phase == "Creating", "configured", nil
			},
		},
		Backoff: workqueue.BackoffFunc(func(int) time.Duration { return time.Hour }),
		History: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Name: "widgets", Reconciler: driver, Sources: []controller.Source{driver.Source()}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error { return c.Run(runCtx) })

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
	stop()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// The recorder writes once the controller has stopped, so that every
	// entry is written whatever the timing (a write in flight when its
	// Run is cancelled drops its entries).
	if n := rec.Flush(ctx); n > 0 {
		t.Fatalf("the history recorder dropped %d entries", n)
	}
	register(t, b, m)
}

// register records the machine's registration as a controller's manager
// does, if no controller did.
func register(t testing.TB, b store.Backend, m *statemachine.Machine[string, string]) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Get(ctx, operator.MachinesKind, widgetKind); err == nil {
		return
	}
	spec, err := json.Marshal(operator.Registration{
		Kind: widgetKind, Machine: m.Descriptor(), Finalizers: []string{controller.DefaultFinalizer},
		Presence: "widgets/", Replica: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, store.Document{Meta: store.Meta{Kind: operator.MachinesKind, Key: widgetKind}, Spec: spec}); err != nil {
		t.Fatal(fmt.Errorf("registering %s: %w", widgetKind, err))
	}
}
