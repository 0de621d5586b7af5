// Package evolvetest holds two versions of a small machine, for the tests
// of a machine that evolves: a Service provisioned in three steps (version
// 1), then in two, with phases renamed, a state retired, a request dropped
// and a Fault phase introduced (version 2).
package evolvetest

import (
	"context"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Kind is the kind of the Service documents.
const Kind = "Service"

// Spec is a Service's spec: its intent.
type Spec struct {
	State string `json:"state"`
}

// Intent returns the spec's intent.
func (s Spec) Intent() string { return s.State }

// Status is a Service's status: the machine's.
type Status struct {
	statemachine.Status[string, string]
}

// Object is a Service document.
type Object = store.Object[Spec, Status]

// V1 declares version 1 (version 0, as it declares none): Provisioning
// runs reserve, configure and start; the state Legacy is served as Up; a
// request rotate; failures land in Idle, as there is no Fault phase.
func V1() statemachine.Definition[string, string] {
	return statemachine.Definition[string, string]{
		Name:    "Service",
		States:  []string{"Up", "Down", "Legacy"},
		Initial: "New",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "New"},
			{Phase: "Provisioning", Type: statemachine.Transitional, Steps: []string{"reserve", "configure", "start"},
				Completion: []statemachine.Require{statemachine.Is("running")}, Then: "Ready", FailTo: "Idle"},
			{Phase: "Ready"},
			{Phase: "Draining", Type: statemachine.Transitional, Steps: []string{"drain"},
				Completion: []statemachine.Require{statemachine.Not("running")}, Then: "Idle", FailTo: "Idle"},
			{Phase: "Idle"},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Up", Phase: "Ready"}, {State: "Legacy", Phase: "Ready"},
			{State: "Down", Phase: "New"}, {State: "Down", Phase: "Idle"}},
		Rules: []statemachine.Rule[string, string]{{State: "Up", Phase: "New", Begin: "Provisioning"},
			{State: "Legacy", Phase: "New", Begin: "Provisioning"}, {State: "Up", Phase: "Idle", Begin: "Provisioning"},
			{State: "Legacy", Phase: "Idle", Begin: "Provisioning"}, {State: "Down", Phase: "Ready", Begin: "Draining"}},
		Requests: []statemachine.RequestRule[string]{{Name: "rotate", Serve: []statemachine.Edge[string]{{From: "Ready", To: "Provisioning"}}}},
	}
}

// V2 declares version 2: Provisioning renamed Deploying and its step
// configure removed, Ready renamed Serving, the state Legacy retired for
// Up, the request rotate dropped, and a Fault phase Broken. With
// migrations false it declares none of its migrations: the defect that
// strands the documents version 1 wrote.
func V2(migrations bool) statemachine.Definition[string, string] {
	d := statemachine.Definition[string, string]{
		Name:    "Service",
		Version: 2,
		States:  []string{"Up", "Down"},
		Initial: "New",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "New"},
			{Phase: "Deploying", Type: statemachine.Transitional, Steps: []string{"reserve", "start"},
				Completion: []statemachine.Require{statemachine.Is("running")}, Then: "Serving"},
			{Phase: "Serving"},
			{Phase: "Draining", Type: statemachine.Transitional, Steps: []string{"drain"},
				Completion: []statemachine.Require{statemachine.Not("running")}, Then: "Idle"},
			{Phase: "Idle"},
			{Phase: "Broken", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Up", Phase: "Serving"}, {State: "Down", Phase: "New"}, {State: "Down", Phase: "Idle"}},
		Rules: []statemachine.Rule[string, string]{{State: "Up", Phase: "New", Begin: "Deploying"}, {State: "Up", Phase: "Idle", Begin: "Deploying"},
			{State: "Down", Phase: "Serving", Begin: "Draining"}, {State: "Up", Phase: "Broken", Begin: "Deploying"},
			{State: "Down", Phase: "Broken", Begin: "Draining"}},
	}
	if migrations {
		d.Migrations = statemachine.Migrations[string, string]{
			States: []statemachine.Rename[string]{{From: "Legacy", To: "Up"}},
			Phases: []statemachine.Rename[string]{{From: "Provisioning", To: "Deploying"}, {From: "Ready", To: "Serving"}},
			Steps:  []statemachine.StepRename{{From: "configure"}},
		}
	}
	return d
}

// Config returns the configuration of a driver of machine m: each of its
// steps calls record with its name and is done at once, and the condition
// running is observed true while the spec's intent is not Down.
func Config(m *statemachine.Machine[string, string], record func(step string)) driver.Config[Spec, Status] {
	cfg := driver.Config[Spec, Status]{Steps: map[string]driver.StepFunc[Spec, Status]{},
		Observers: map[string]driver.ObserverFunc[Spec, Status]{
			"running": func(_ context.Context, obj *Object) (bool, string, error) { return obj.Spec.State != "Down", "", nil },
		}}
	for _, s := range m.Steps() {
		cfg.Steps[s] = func(context.Context, *Object, string) (statemachine.Outcome, error) {
			record(s)
			return statemachine.Done, nil
		}
	}
	return cfg
}
