package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

type widgetSpec struct {
	State string `json:"state"`
}

func (s widgetSpec) Intent() string { return s.State }

type widgetStatus struct {
	sm.Status[string, string]
}

// widgetMachine builds a widget in two steps; Failed holds it for an
// oncall.
func widgetMachine(t *testing.T) *sm.Machine[string, string] {
	t.Helper()
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "Widget",
		States:  []string{"Up", "Gone"},
		Initial: "Pending",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Pending"},
			{Phase: "Building", Type: sm.Transitional, Steps: []string{"prepare", "build"}, Completion: []sm.Require{sm.Is("built")}, Then: "Ready"},
			{Phase: "Ready"},
			{Phase: "Removing", Type: sm.Transitional, NoReturn: true, Steps: []string{"remove"}, Completion: []sm.Require{sm.Not("built")}, Then: "Removed"},
			{Phase: "Removed", Type: sm.Terminal},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{{State: "Up", Phase: "Ready"}, {State: "Gone", Phase: "Removed", Final: true}},
		Rules: []sm.Rule[string, string]{
			{State: "Up", Phase: "Pending", Begin: "Building"},
			{State: "Gone", Phase: "Pending", Begin: "Removing"},
			{State: "Gone", Phase: "Ready", Begin: "Removing"},
			{State: "Gone", Phase: "Failed", Begin: "Removing"},
		},
		Refusals: []sm.RefusalRule[string, string]{{States: []string{"Up"}, Phases: []string{"Removing", "Removed"}, Reason: "removed for good"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// eventually polls cond until it holds, failing the test after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// TestOperatorActions runs a widget's controller on PostgreSQL and acts on
// a widget as an operator does, through oncall.Client: the controller
// records its machine and holds its presence lease; a widget whose step
// keeps failing is paused, a retry issued meanwhile waits for the resume,
// and then runs the step at once although its backoff has minutes left.
func TestOperatorActions(t *testing.T) {
	ctx := t.Context()
	kinds := append([]string{"Widget", registry.Kind}, history.Kinds("Widget")...)
	s := newStore(t, postgres.Config{Kinds: kinds, Logger: nopLogger})
	coll, err := store.NewCollection[widgetSpec, widgetStatus](s, "Widget", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.NewRecorder(s, history.RecorderConfig{FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var builds atomic.Int32
	var fixed, built atomic.Bool
	step := func(ctx context.Context, obj *store.Object[widgetSpec, widgetStatus], opID string) (sm.Outcome, error) {
		return sm.Done, nil
	}
	d, err := driver.New(coll, widgetMachine(t), driver.Config[widgetSpec, widgetStatus]{
		Steps: map[string]driver.StepFunc[widgetSpec, widgetStatus]{
			"prepare": step,
			"build": func(ctx context.Context, obj *store.Object[widgetSpec, widgetStatus], opID string) (sm.Outcome, error) {
				builds.Add(1)
				if !fixed.Load() {
					return sm.Failed, context.DeadlineExceeded
				}
				built.Store(true)
				return sm.Done, nil
			},
			"remove": step,
		},
		Observers: map[string]driver.ObserverFunc[widgetSpec, widgetStatus]{
			"built": func(ctx context.Context, obj *store.Object[widgetSpec, widgetStatus]) (bool, string, error) {
				return built.Load(), "", nil
			},
		},
		Backoff: workqueue.BackoffFunc(func(int) time.Duration { return 10 * time.Minute }),
		History: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Name: "widgets", Reconciler: d, Sources: []controller.Source{d.Source()}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}, Identity: "r1", LeasePrefix: "w/"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- rec.Run(runCtx) }()
	go func() { done <- m.Run(runCtx) }()
	stopped := false
	halt := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	defer halt()

	ops, err := oncall.New(s, oncall.Config{Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the machine recorded and served", func() bool {
		served, err := ops.Served(ctx, "Widget")
		return err == nil && served
	})
	reg, err := ops.Registration(ctx, "Widget")
	if err != nil || reg.Presence != "w/presence/Widget/" || reg.Replica != "r1" || reg.Machine.Name != "Widget" {
		t.Fatalf("registration %+v, %v", reg, err)
	}

	if _, err := coll.Create(ctx, &store.Object[widgetSpec, widgetStatus]{Meta: store.Meta{Key: "w-1"}, Spec: widgetSpec{State: "Up"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "build failed once", func() bool {
		o, err := ops.Get(ctx, "Widget", "w-1")
		return err == nil && o.Operation != nil && o.Operation.Attempts == 1
	})
	if err := ops.Pause(ctx, "Widget", "w-1", "fixing the builder"); err != nil {
		t.Fatal(err)
	}
	fixed.Store(true)
	cmd, err := ops.Retry(ctx, "Widget", "w-1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if o, err := ops.Get(ctx, "Widget", "w-1"); err != nil || len(o.Commands) != 1 || builds.Load() != 1 {
		t.Fatalf("while paused: commands %+v, %d builds, %v: want the retry waiting", o.Commands, builds.Load(), err)
	}
	if err := ops.Resume(ctx, "Widget", "w-1"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := ops.Wait(wctx, "Widget", "w-1", cmd.ID)
	if err != nil || e.Outcome != oncall.OutcomeApplied || e.Actor != "ann" || e.Step != "build" {
		t.Fatalf("retry: %+v, %v", e, err)
	}
	eventually(t, "the widget ready", func() bool {
		o, err := ops.Get(ctx, "Widget", "w-1")
		return err == nil && o.Phase == "Ready"
	})
	if n := builds.Load(); n != 2 {
		t.Errorf("%d builds, want 2: the failed one and the retry", n)
	}

	halt()
	if served, err := ops.Served(ctx, "Widget"); err != nil || served {
		t.Errorf("served after the replica stopped: %v, %v", served, err)
	}
}
