package smtest_test

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/statemachine/smtest"
)

// lamp is a World: one simulated lamp.
type lamp struct{ on bool }

func (l *lamp) Run(d statemachine.Decision[string, string], _ time.Time) (statemachine.Outcome, error) {
	l.on = d.Step == "switch_on"
	return statemachine.Done, nil
}

func (l *lamp) Observe(time.Time) []statemachine.Observation {
	return []statemachine.Observation{{Name: "lit", Status: l.on}}
}

func (l *lamp) Check(string, statemachine.Status[string, string]) error { return nil }

func (l *lamp) Matches(intent string, _ statemachine.Status[string, string]) error {
	if l.on != (intent == "On") {
		return fmt.Errorf("lamp on=%v, intent %s", l.on, intent)
	}
	return nil
}

// In a test: smtest.Check(t, cfg). Here the property runs under rapid.Check
// with a reporter, to show the result.
func Example() {
	m, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Light",
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
		fmt.Println(err)
		return
	}
	cfg := smtest.Config[string, string]{
		Machine: m,
		World:   func(*rapid.T) smtest.World[string, string] { return &lamp{} },
	}
	var r recorder
	rapid.Check(&r, func(t *rapid.T) { smtest.Run(t, cfg) })
	fmt.Println("failed:", r.failed)
	// Output:
	// failed: false
}
