package statemachine_test

import (
	"errors"
	"fmt"

	"github.com/tendhq/tend/statemachine"
)

// A new version of a machine renames a phase and removes a step; its
// migrations say so, and a document stopped half-way through an operation
// of the old version is carried on at the step that follows.
func ExampleMachine_Carry() {
	v2, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Service",
		Version: 2,
		States:  []string{"Up", "Down"},
		Initial: "New",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "New"},
			{Phase: "Deploying", Type: statemachine.Transitional, Steps: []string{"reserve", "start"},
				Completion: []statemachine.Require{statemachine.Is("running")}, Then: "Serving"},
			{Phase: "Serving"},
			{Phase: "Broken", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Up", Phase: "Serving"}, {State: "Down", Phase: "New"}},
		Rules: []statemachine.Rule[string, string]{{State: "Up", Phase: "New", Begin: "Deploying"},
			{State: "Up", Phase: "Broken", Begin: "Deploying"}},
		Refusals: []statemachine.RefusalRule[string, string]{{States: []string{"Down"}, Phases: []string{"Serving", "Broken"},
			Reason: "a service once up stays up"}},
		Migrations: statemachine.Migrations[string, string]{
			Phases: []statemachine.Rename[string]{{From: "Provisioning", To: "Deploying"}},
			Steps:  []statemachine.StepRename{{From: "configure"}}, // removed
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Written by version 1, in the middle of Provisioning.
	old := statemachine.Status[string, string]{Phase: "Provisioning", Target: "Up",
		Operation: &statemachine.Operation[string]{ID: "op1", Phase: "Provisioning", Done: []string{"reserve", "configure"}}}
	carried, strand := v2.Carry("Up", old)
	fmt.Println(carried.Phase, carried.Operation.Done, strand == nil)

	// A status the migrations do not cover is stranded, and says why.
	_, strand = v2.Carry("Up", statemachine.Status[string, string]{Phase: "Ready", Target: "Up"})
	stranded := &statemachine.StrandedError{Kind: "Service", Machine: v2.Name()}
	stranded.Add("web", *strand)
	err = stranded.Err()
	fmt.Println(errors.Is(err, statemachine.ErrStranded))
	fmt.Println(err)
	// Output:
	// Deploying [reserve] true
	// true
	// statemachine: 1 Service documents stranded by machine Service; web (Up, Ready): phase Ready is not a phase of the machine
}
