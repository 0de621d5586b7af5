package console_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// The tests' documents are lamps: the intent On makes a lamp's controller
// begin Brightening and run its step; the lamp is Lit once the test says
// it is lit (lamps.light), so the test decides when its phase changes.

type lampSpec struct {
	State string `json:"state"`
}

func (s lampSpec) Intent() string { return s.State }

type lampStatus struct {
	statemachine.Status[string, string]
}

const lampKind = "Lamp"

func lampMachine(t testing.TB) *statemachine.Machine[string, string] {
	m, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Lamp",
		States:  []string{"On", "Off"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			{Phase: "Brightening", Type: statemachine.Transitional, Steps: []string{"switch_on"},
				Completion: []statemachine.Require{statemachine.Is("lit")}, Then: "Lit"},
			{Phase: "Lit"},
			{Phase: "Dimming", Type: statemachine.Transitional, Steps: []string{"switch_off"},
				Completion: []statemachine.Require{statemachine.Not("lit")}, Then: "Dark"},
			{Phase: "Fault", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Off", Phase: "Dark"}, {State: "On", Phase: "Lit"}},
		Rules: []statemachine.Rule[string, string]{
			{State: "On", Phase: "Dark", Begin: "Brightening"},
			{State: "Off", Phase: "Lit", Begin: "Dimming"},
			{State: "On", Phase: "Fault", Begin: "Brightening"},
			{State: "Off", Phase: "Fault", Begin: "Dimming"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lamps is a memory store driven by a real controller with the lamp
// machine, whose registration is recorded.
type lamps struct {
	store  *memory.Store
	coll   *store.Collection[lampSpec, lampStatus]
	driver *driver.Driver[lampSpec, lampStatus]
	mgr    *manager.Manager

	mu  sync.Mutex // guards lit
	lit map[string]bool
}

// newLamps starts the lamps' controller; it stops when the test ends.
func newLamps(t testing.TB) *lamps {
	t.Helper()
	mem, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lamps{store: mem, lit: map[string]bool{}}
	rec, err := history.NewRecorder(mem, history.RecorderConfig{FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Store: mem, History: rec})
	if err != nil {
		t.Fatal(err)
	}
	step := func(context.Context, *store.Object[lampSpec, lampStatus], string) error { return nil }
	l.driver, err = manager.Drive[lampSpec, lampStatus](mgr, lampMachine(t).Definition()).Named("lamps").
		Steps(driver.Do("switch_on", step), driver.Do("switch_off", step)).
		Conditions(driver.Observe("lit", func(ctx context.Context, lamp *store.Object[lampSpec, lampStatus]) (bool, string, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.lit[lamp.Key], "", nil
		})).
		WithDriver(driver.Config[lampSpec, lampStatus]{WaitInterval: 20 * time.Millisecond}).
		Complete()
	if err != nil {
		t.Fatal(err)
	}
	l.coll, l.mgr = l.driver.Collection(), mgr

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = mgr.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	// The manager records the lamps' machine as it starts.
	client, err := oncall.New(mem, oncall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := client.Registration(ctx, lampKind); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the manager recorded no registration of %s: %v", lampKind, err)
		}
	}
	return l
}

// create creates lamp key with intent state.
func (l *lamps) create(t testing.TB, key, state string) {
	t.Helper()
	if _, err := l.coll.Create(context.Background(), &store.Object[lampSpec, lampStatus]{Meta: store.Meta{Key: key}, Spec: lampSpec{State: state}}); err != nil {
		t.Fatal(err)
	}
}

// light makes lamp key observed lit (or not).
func (l *lamps) light(key string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lit[key] = on
}

// waitPhase waits until lamp key rests in phase.
func (l *lamps) waitPhase(t testing.TB, key, phase string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := l.coll.Get(context.Background(), key)
		if err == nil && o.Status.Phase == phase {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lamp %s is not %s after 10s (err %v, status %+v)", key, phase, err, o)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// status returns lamp key's status.
func (l *lamps) status(t testing.TB, key string) lampStatus {
	t.Helper()
	o, err := l.coll.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return o.Status
}
