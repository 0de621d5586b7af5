package driver_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// A lamp's spec holds the user's intent; its status embeds the machine's
// status, next to what the steps record.
type LampSpec struct {
	State string `json:"state"`
}

func (s LampSpec) Intent() string { return s.State }

type LampStatus struct {
	statemachine.Status[string, string]
}

// ExampleDriver drives a lamp with a controller on the memory store: the
// intent On makes the driver begin Brightening, run its step and complete
// into Lit once the lamp is observed lit; the intent Off dims it again.
func ExampleDriver() {
	machine, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Lamp",
		States:  []string{"On", "Off"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			{Phase: "Brightening", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_on"},
				Completion: []statemachine.Require{statemachine.Is("lit")}, Then: "Lit"},
			{Phase: "Lit"},
			{Phase: "Dimming", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_off"},
				Completion: []statemachine.Require{statemachine.Not("lit")}, Then: "Dark"},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Off", Phase: "Dark"}, {State: "On", Phase: "Lit"}},
		Rules: []statemachine.Rule[string, string]{
			{State: "On", Phase: "Dark", Begin: "Brightening"},
			{State: "Off", Phase: "Lit", Begin: "Dimming"},
		},
	})
	if err != nil {
		panic(err)
	}
	mem, err := memory.New(memory.Config{Kinds: []string{"Lamp"}})
	if err != nil {
		panic(err)
	}
	lamps, err := store.NewCollection[LampSpec, LampStatus](mem, "Lamp", store.CollectionConfig{})
	if err != nil {
		panic(err)
	}

	var mu sync.Mutex // guards lit, the world the steps act on
	lit := map[string]bool{}
	switchTo := func(on bool) driver.StepFunc[LampSpec, LampStatus] {
		return func(ctx context.Context, lamp *store.Object[LampSpec, LampStatus], opID string) (statemachine.Outcome, error) {
			mu.Lock()
			defer mu.Unlock()
			lit[lamp.Key] = on
			return statemachine.Done, nil
		}
	}
	driver, err := driver.New(lamps, machine, driver.Config[LampSpec, LampStatus]{
		Steps: map[string]driver.StepFunc[LampSpec, LampStatus]{
			"switch_on":  switchTo(true),
			"switch_off": switchTo(false),
		},
		Observers: map[string]driver.ObserverFunc[LampSpec, LampStatus]{
			"lit": func(ctx context.Context, lamp *store.Object[LampSpec, LampStatus]) (bool, string, error) {
				mu.Lock()
				defer mu.Unlock()
				return lit[lamp.Key], "", nil
			},
		},
	})
	if err != nil {
		panic(err)
	}
	c, err := controller.New(controller.Config{Name: "lamps", Reconciler: driver, Sources: []controller.Source{driver.Source()}})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()

	// reached waits, with Await, until the lamp written has settled at its
	// intent: Await returns an error instead when the lamp is held in
	// Fault, its intent is refused or it is removed.
	reached := func(written *store.Object[LampSpec, LampStatus], err error) {
		if err != nil {
			panic(err)
		}
		if err := driver.Await(ctx, written); err != nil {
			panic(err)
		}
		lamp, err := lamps.Get(ctx, written.Key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", lamp.Key, lamp.Status.Phase)
	}
	reached(lamps.Create(ctx, &store.Object[LampSpec, LampStatus]{Meta: store.Meta{Key: "hall"}, Spec: LampSpec{State: "On"}}))
	reached(driver.UpdateSpec(ctx, "hall", func(s *LampSpec) { s.State = "Off" }))

	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// hall: Lit
	// hall: Dark
}
