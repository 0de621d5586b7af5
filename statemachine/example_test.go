package statemachine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/statemachine"
)

// State is the ApiGateway's intent, written by its user.
type State string

// The gateway's states.
const (
	Running    State = "Running"
	Stopped    State = "Stopped"
	Restarting State = "Restarting"
	Deleted    State = "Deleted"
)

// Phase is the ApiGateway's progress, written only by its controller.
type Phase string

// The gateway's phases.
const (
	Creating     Phase = "Creating"
	Created      Phase = "Created"
	Starting     Phase = "Starting"
	Started      Phase = "Started"
	Stopping     Phase = "Stopping"
	StoppedPhase Phase = "Stopped"
	Deleting     Phase = "Deleting"
	DeletedPhase Phase = "Deleted"
	Failed       Phase = "Failed"
)

// now is the time the examples decide at; the machine never reads a clock.
var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// gateway declares the ApiGateway machine: creation, start, stop,
// a restart that is one stop-then-start cycle, and an ordered, checkpointed
// cascade deletion past a point of no return.
func gateway() statemachine.Definition[State, Phase] {
	return statemachine.Definition[State, Phase]{
		Name:    "ApiGateway",
		States:  []State{Running, Stopped, Restarting, Deleted},
		Initial: Creating,
		Phases: []statemachine.PhaseSpec[Phase]{
			{Phase: Creating, Type: statemachine.Transitional, Then: Created,
				Steps:      []string{"create_namespace", "create_database", "create_runtime_domain"},
				Completion: []statemachine.Require{statemachine.Is("namespace_ready"), statemachine.Is("database_ready"), statemachine.Is("runtime_domain_present")}},
			{Phase: Created},
			{Phase: Starting, Type: statemachine.Transitional, Then: Started,
				Steps:      []string{"create_deployment", "create_service", "activate_runtime_domain"},
				Completion: []statemachine.Require{statemachine.Is("deployment_available")}},
			{Phase: Started},
			{Phase: Stopping, Type: statemachine.Transitional, Then: StoppedPhase,
				Steps:      []string{"deactivate_runtime_domain", "delete_deployment", "delete_service"},
				Completion: []statemachine.Require{statemachine.Not("instance_present")}},
			{Phase: StoppedPhase},
			{Phase: Deleting, Type: statemachine.Transitional, NoReturn: true, Then: DeletedPhase,
				Steps: []string{"delete_cron_triggers", "delete_cloud_functions", "delete_stages",
					"delete_runtime_domain", "delete_instance", "delete_database", "delete_namespace"},
				Completion: []statemachine.Require{statemachine.Not("runtime_domain_present"), statemachine.Not("instance_present"),
					statemachine.Not("database_ready"), statemachine.Not("namespace_ready")}},
			{Phase: DeletedPhase, Type: statemachine.Terminal},
			// Failed operations land here, for an operator; deletion still
			// ends a failed gateway's life.
			{Phase: Failed, Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[State, Phase]{
			{State: Stopped, Phase: Created},
			{State: Running, Phase: Started},
			// Restarting is Running plus a restart request (see Requests).
			{State: Restarting, Phase: Started},
			{State: Stopped, Phase: StoppedPhase},
			{State: Deleted, Phase: DeletedPhase, Final: true},
		},
		Rules: []statemachine.Rule[State, Phase]{
			{State: Running, Phase: Created, Begin: Starting},
			{State: Restarting, Phase: Created, Begin: Starting},
			{State: Deleted, Phase: Created, Begin: Deleting},
			{State: Stopped, Phase: Started, Begin: Stopping},
			{State: Deleted, Phase: Started, Begin: Deleting},
			{State: Running, Phase: StoppedPhase, Begin: Starting},
			{State: Restarting, Phase: StoppedPhase, Begin: Starting},
			{State: Deleted, Phase: StoppedPhase, Begin: Deleting},
			{State: Deleted, Phase: Failed, Begin: Deleting},
		},
		Refusals: []statemachine.RefusalRule[State, Phase]{{
			States: []State{Running, Stopped, Restarting},
			Phases: []Phase{Deleting, DeletedPhase},
			Reason: "a gateway being deleted cannot be brought back",
		}},
		// A restart is one stop-then-start cycle ending in Started: from
		// Started it begins Stopping; from Created or Stopped the start the
		// intent begins anyway serves it.
		Requests: []statemachine.RequestRule[Phase]{{Name: "restart",
			Serve: []statemachine.Edge[Phase]{{From: Started, To: Stopping}, {From: Created, To: Starting}, {From: StoppedPhase, To: Starting}}}},
		// Deletion and stopping do not wait for an operation that may never
		// complete: they take over at its next step boundary.
		Aborts: []statemachine.AbortRule[State, Phase]{
			{State: Deleted, Phase: Creating, To: Deleting},
			{State: Deleted, Phase: Starting, To: Deleting},
			{State: Deleted, Phase: Stopping, To: Deleting},
			{State: Stopped, Phase: Starting, To: Stopping},
		},
	}
}

// Building checks the definition; a machine with a hole is never built.
func ExampleNew() {
	def := gateway()
	m, err := statemachine.New(def)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Name(), len(m.States()), "states,", len(m.Phases()), "phases,", len(m.Steps()), "steps")

	// A stopped gateway that nothing tells how to be deleted would sit for
	// ever, its stages and database never cleaned up: the build names the
	// pair no rule covers.
	def.Rules = slices.DeleteFunc(def.Rules, func(r statemachine.Rule[State, Phase]) bool {
		return r.State == Deleted && r.Phase == StoppedPhase
	})
	_, err = statemachine.New(def)
	var pe *statemachine.PairError[State, Phase]
	if errors.As(err, &pe) && errors.Is(err, statemachine.ErrUncovered) {
		fmt.Printf("rejected: (%s, %s) is not covered\n", pe.State, pe.Phase)
	}
	// Output:
	// ApiGateway 4 states, 9 phases, 16 steps
	// rejected: (Deleted, Stopped) is not covered
}

// A controller's loop: decide, act, fold the result, persist, repeat.
func ExampleMachine_Decide() {
	m, err := statemachine.New(gateway())
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := m.NewStatus()
	ids := 0
	for tick := 0; tick < 12; tick++ {
		// Observe the world (here: everything Creating needs is ready).
		st = st.Observe(now,
			statemachine.Observation{Name: "namespace_ready", Status: tick >= 4},
			statemachine.Observation{Name: "database_ready", Status: tick >= 4},
			statemachine.Observation{Name: "runtime_domain_present", Status: tick >= 4},
		)
		d, err := m.Decide(Stopped, st, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		var r statemachine.Report
		switch d.Action {
		case statemachine.Nothing:
			fmt.Println("settled in", st.Phase)
			return
		case statemachine.Begin:
			ids++
			r.OperationID = fmt.Sprint("op-", ids) // persisted before any step runs
			fmt.Println("begin", d.Next)
		case statemachine.Run:
			r.Outcome = statemachine.Done // the step's idempotent action went here
			fmt.Println("run", d.Step, "for", d.Operation.ID)
		case statemachine.Wait:
			fmt.Println("wait for", d.Pending[0])
		case statemachine.Complete:
			fmt.Println("complete into", d.Next)
		}
		if st, err = m.Apply(st, d, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// begin Creating
	// run create_namespace for op-1
	// run create_database for op-1
	// run create_runtime_domain for op-1
	// complete into Created
	// settled in Created
}

// A change of intent while deleting is refused, naming the phase; the committed
// deletion carries on.
func ExampleMachine_Admit() {
	m, err := statemachine.New(gateway())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Admit(Running, StoppedPhase))
	err = m.Admit(Running, Deleting)
	fmt.Println(errors.Is(err, statemachine.ErrIntentRefused), err)

	st := statemachine.Status[State, Phase]{Phase: Deleting, Target: Deleted,
		Operation: &statemachine.Operation[Phase]{ID: "op-7", Phase: Deleting, From: Started, Done: []string{"delete_cron_triggers"}}}
	d, _ := m.Decide(Running, st, now)
	fmt.Println(d.Action, d.Step, d.Refused != nil)
	// Output:
	// <nil>
	// true statemachine: ApiGateway: intent Running refused in phase Deleting: a gateway being deleted cannot be brought back
	// run delete_cloud_functions true
}

// A restart is a one-shot request: its token, carried by the spec and folded
// into the status with Request, is served once — from Started by one
// stop-then-start cycle — and recorded as served when Stopping completes.
func ExampleRequestRule() {
	m, err := statemachine.New(gateway())
	if err != nil {
		fmt.Println(err)
		return
	}
	st := statemachine.Status[State, Phase]{Phase: Started, Target: Running}
	st = st.Request("restart", "r1") // the user asked for a restart
	ids := 0
	for range 20 {
		st = st.Observe(now,
			statemachine.Observation{Name: "deployment_available", Status: st.Phase == Starting},
			statemachine.Observation{Name: "instance_present", Status: st.Phase == Starting})
		d, _ := m.Decide(Restarting, st, now)
		var r statemachine.Report
		switch d.Action {
		case statemachine.Nothing:
			fmt.Println("settled in", st.Phase, "served", st.Requests[0].Served)
			return
		case statemachine.Begin:
			ids++
			r.OperationID = fmt.Sprint(ids)
			fmt.Println(strings.TrimSpace(fmt.Sprint(st.Phase, " → ", d.Next, " ", d.Request)))
		case statemachine.Run:
			r.Outcome = statemachine.Done
		}
		st, _ = m.Apply(st, d, r)
	}
	// Output:
	// Started → Stopping restart
	// Stopped → Starting
	// settled in Started served [r1]
}

// The Mermaid export feeds the docs; a golden test keeps the gateway's current.
func ExampleMachine_Mermaid() {
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
	fmt.Print(m.Mermaid())
	// Output:
	// stateDiagram-v2
	//     %% Light: generated by statemachine.Machine.Mermaid; do not edit.
	//     [*] --> Dark
	//     Dark : settles Off
	//     Brightening : 1. switch_on
	//     Lit : settles On
	//     Dimming : 1. switch_off
	//     Dark --> Brightening : On
	//     Brightening --> Lit : when lit
	//     Lit --> Dimming : Off
	//     Dimming --> Dark : when not lit
}

// A machine's descriptor is plain JSON that a tool without the machine's Go
// types rebuilds into a machine that draws and decides the same way.
func ExampleMachine_Descriptor() {
	m, err := statemachine.New(gateway())
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := json.Marshal(m.Descriptor())
	if err != nil {
		fmt.Println(err)
		return
	}
	// Elsewhere, in a program that only has the JSON:
	rebuilt, err := statemachine.ParseDescriptor(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := rebuilt.Decide("Deleted", rebuilt.NewStatus(), now)
	fmt.Println(rebuilt.Name(), rebuilt.Phases()[0], d.Action)
	fmt.Println("same diagram:", rebuilt.Mermaid() == m.Mermaid())
	// Output:
	// ApiGateway Creating abort
	// same diagram: true
}

// An operator's commands, carried out in order on a workspace that failed
// restoring: a skip of a step that did not fail is refused, a retry
// resumes the failed operation, same id, its checkpoint kept.
func ExampleMachine_ApplyCommands() {
	m, err := statemachine.New(workspace())
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := statemachine.Status[string, string]{Phase: "ERROR", Target: "RUNNING",
		Failure: &statemachine.Failure[string]{Step: "restore", Cause: statemachine.CauseTerminal, Reason: "bucket gone",
			Operation: statemachine.Operation[string]{ID: "op-7", Phase: "RESTORING", Done: []string{"provision"}}},
		Commands: []statemachine.Command{
			{ID: "c1", Verb: statemachine.VerbSkip, Step: "provision", By: "ann"},
			{ID: "c2", Verb: statemachine.VerbRetry, By: "ann"},
		}}
	st, outcomes := m.ApplyCommands("RUNNING", st, now)
	for _, o := range outcomes {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s %s: applied=%t %s %s", o.Command.ID, o.Command.Verb, o.Applied, o.To, o.Reason)))
	}
	fmt.Println(st.Phase, st.Operation.ID, st.Operation.Done, len(st.Commands))
	// Output:
	// c1 skip: applied=false  step "provision" is not the step that failed (restore)
	// c2 retry: applied=true RESTORING
	// RESTORING op-7 [provision] 0
}
