package drivertest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/driver/drivertest"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// The Service machine: a volume made once, an instance started and stopped
// on it, a restart request, and deletion.

type state string

type phase string

const (
	Running    state = "Running"
	Stopped    state = "Stopped"
	Restarting state = "Restarting"
	Deleted    state = "Deleted"

	Creating phase = "Creating"
	Created  phase = "Created"
	Starting phase = "Starting"
	Started  phase = "Started"
	Stopping phase = "Stopping"
	Halted   phase = "Stopped"
	Deleting phase = "Deleting"
	Gone     phase = "Deleted"
	Failed   phase = "Failed"
)

func serviceDefinition() sm.Definition[state, phase] {
	return sm.Definition[state, phase]{
		Name:    "Service",
		States:  []state{Running, Stopped, Restarting, Deleted},
		Initial: Creating,
		Phases: []sm.PhaseSpec[phase]{
			{Phase: Creating, Type: sm.Transitional, Then: Created, Steps: []string{"create_volume"},
				Completion: []sm.Require{sm.Is("volume_ready")}},
			{Phase: Created},
			{Phase: Starting, Type: sm.Transitional, Then: Started, Steps: []string{"create_instance"},
				Completion: []sm.Require{sm.Is("instance_ready")}},
			{Phase: Started},
			{Phase: Stopping, Type: sm.Transitional, Then: Halted, Steps: []string{"delete_instance"},
				Completion: []sm.Require{sm.Not("instance_present")}},
			{Phase: Halted},
			{Phase: Deleting, Type: sm.Transitional, NoReturn: true, Then: Gone, Steps: []string{"delete_instance", "delete_volume"},
				Completion: []sm.Require{sm.Not("instance_present"), sm.Not("volume_ready")}},
			{Phase: Gone, Type: sm.Terminal},
			{Phase: Failed, Type: sm.Fault},
		},
		Settled: []sm.Settle[state, phase]{
			{State: Stopped, Phase: Created},
			{State: Running, Phase: Started},
			{State: Restarting, Phase: Started},
			{State: Stopped, Phase: Halted},
			{State: Deleted, Phase: Gone, Final: true},
		},
		Rules: []sm.Rule[state, phase]{
			{State: Running, Phase: Created, Begin: Starting},
			{State: Restarting, Phase: Created, Begin: Starting},
			{State: Deleted, Phase: Created, Begin: Deleting},
			{State: Stopped, Phase: Started, Begin: Stopping},
			{State: Deleted, Phase: Started, Begin: Deleting},
			{State: Running, Phase: Halted, Begin: Starting},
			{State: Restarting, Phase: Halted, Begin: Starting},
			{State: Deleted, Phase: Halted, Begin: Deleting},
			{State: Deleted, Phase: Failed, Begin: Deleting},
		},
		Requests: []sm.RequestRule[phase]{{Name: "restart",
			Serve: []sm.Edge[phase]{{From: Started, To: Stopping}, {From: Created, To: Starting}, {From: Halted, To: Starting}}}},
		Refusals: []sm.RefusalRule[state, phase]{{
			States: []state{Running, Stopped, Restarting},
			Phases: []phase{Deleting, Gone},
			Reason: "a service being deleted cannot be brought back",
		}},
	}
}

type spec struct {
	State state `json:"state"`
	// Restart is the token of the last restart asked for (with State
	// Restarting, unless the restart leaves the intent alone).
	Restart string `json:"restart,omitempty"`
}

func (s spec) Intent() state { return s.State }

func (s spec) Requests() map[string][]string {
	if s.Restart == "" {
		return nil
	}
	return map[string][]string{"restart": {s.Restart}}
}

type status struct {
	sm.Status[state, phase]
}

type object = store.Object[spec, status]

// cloud simulates what the services' steps make: volumes and instances. An
// instance becomes ready startDelay after it is made.
type cloud struct {
	startDelay time.Duration
	// leaky, when set, makes create_instance forget that it already made
	// the instance: a step that is not idempotent.
	leaky bool
	// lazy, when set, makes a made instance never become ready.
	lazy bool
	// idle, when set, makes create_instance succeed without making an
	// instance: a step that does nothing.
	idle bool

	mu        sync.Mutex
	volume    bool
	instances int
	readyAt   time.Time
}

func (c *cloud) steps() map[string]driver.StepFunc[spec, status] {
	do := func(f func()) driver.StepFunc[spec, status] {
		return func(ctx context.Context, _ *object, _ string) (sm.Outcome, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			f()
			return sm.Done, nil
		}
	}
	return map[string]driver.StepFunc[spec, status]{
		"create_volume": do(func() { c.volume = true }),
		"create_instance": do(func() {
			if !c.idle && (c.instances == 0 || c.leaky) {
				c.instances++
				c.readyAt = time.Now().Add(c.startDelay)
			}
		}),
		"delete_instance": do(func() { c.instances = 0 }),
		"delete_volume":   do(func() { c.volume = false }),
	}
}

func (c *cloud) observers() map[string]driver.ObserverFunc[spec, status] {
	read := func(f func() bool) driver.ObserverFunc[spec, status] {
		return func(context.Context, *object) (bool, string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return f(), "", nil
		}
	}
	return map[string]driver.ObserverFunc[spec, status]{
		"volume_ready":     read(func() bool { return c.volume }),
		"instance_present": read(func() bool { return c.instances > 0 }),
		"instance_ready": read(func() bool {
			return c.instances > 0 && !c.lazy && !time.Now().Before(c.readyAt)
		}),
	}
}

// invariant: never two instances, never an instance without its volume,
// nothing left once the service is removed.
func (c *cloud) invariant(_ context.Context, _ string, obj *object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.instances > 1:
		return fmt.Errorf("%d instances", c.instances)
	case c.instances > 0 && !c.volume:
		return errors.New("an instance without its volume")
	case obj == nil && (c.volume || c.instances > 0):
		return fmt.Errorf("removed, but volume %t and %d instances are left", c.volume, c.instances)
	}
	return nil
}

// settled: a running service has a ready instance, a stopped one none.
func (c *cloud) settled(_ context.Context, obj *object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch obj.Spec.State {
	case Running, Restarting:
		if c.instances != 1 || time.Now().Before(c.readyAt) {
			return fmt.Errorf("running, but %d instances (ready at %v)", c.instances, c.readyAt)
		}
	case Stopped:
		if c.instances != 0 {
			return fmt.Errorf("stopped, but %d instances", c.instances)
		}
	}
	return nil
}

// serviceConfig returns the harness's configuration of the Service machine
// built from def, its world changed by planted.
func serviceConfig(def sm.Definition[state, phase], planted func(*cloud)) drivertest.Config[spec, status, state, phase] {
	m, err := sm.New(def)
	if err != nil {
		panic(err)
	}
	return drivertest.Config[spec, status, state, phase]{
		Machine: m,
		Kind:    "Service",
		Fixture: func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
			c := &cloud{startDelay: time.Duration(env.Rand.Int64N(int64(20 * time.Second)))}
			if planted != nil {
				planted(c)
			}
			return drivertest.Fixture[spec, status]{
				Driver:    driver.Config[spec, status]{Steps: c.steps(), Observers: c.observers(), WaitInterval: time.Second},
				Invariant: c.invariant,
				Matches:   c.settled,
			}, nil
		},
		// As the service's API: a restart is asked for with a new token, so
		// Restarting set again without one asks for none.
		SetIntent: func(s *spec, st state) { s.State, s.Restart = st, "" },
		Request:   func(s *spec, _, token string) { s.State, s.Restart = Restarting, token },
	}
}
