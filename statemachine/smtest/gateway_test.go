package smtest_test

import (
	"errors"
	"fmt"
	"time"

	"pgregory.net/rapid"

	sm "github.com/tendhq/tend/statemachine"
)

type state string

type phase string

const (
	running    state = "Running"
	stopped    state = "Stopped"
	restarting state = "Restarting"
	deleted    state = "Deleted"

	creating     phase = "Creating"
	created      phase = "Created"
	starting     phase = "Starting"
	started      phase = "Started"
	stopping     phase = "Stopping"
	stoppedPhase phase = "Stopped"
	deleting     phase = "Deleting"
	deletedPhase phase = "Deleted"
	failedPhase  phase = "Failed"
)

// gatewayDefinition is the ApiGateway machine (see the statemachine
// package's examples for a commented copy).
func gatewayDefinition() sm.Definition[state, phase] {
	return sm.Definition[state, phase]{
		Name:    "ApiGateway",
		States:  []state{running, stopped, restarting, deleted},
		Initial: creating,
		Phases: []sm.PhaseSpec[phase]{
			{Phase: creating, Type: sm.Transitional, Then: created,
				Steps:      []string{"create_namespace", "create_database", "create_runtime_domain"},
				Completion: []sm.Require{sm.Is("namespace_ready"), sm.Is("database_ready"), sm.Is("runtime_domain_present")}},
			{Phase: created},
			{Phase: starting, Type: sm.Transitional, Then: started,
				Steps:      []string{"create_deployment", "create_service", "activate_runtime_domain"},
				Completion: []sm.Require{sm.Is("deployment_available")}},
			{Phase: started},
			{Phase: stopping, Type: sm.Transitional, Then: stoppedPhase,
				Steps:      []string{"deactivate_runtime_domain", "delete_deployment", "delete_service"},
				Completion: []sm.Require{sm.Not("instance_present")}},
			{Phase: stoppedPhase},
			{Phase: deleting, Type: sm.Transitional, NoReturn: true, Then: deletedPhase,
				Steps: []string{"delete_cron_triggers", "delete_cloud_functions", "delete_stages",
					"delete_runtime_domain", "delete_instance", "delete_database", "delete_namespace"},
				Completion: []sm.Require{sm.Not("runtime_domain_present"), sm.Not("instance_present"),
					sm.Not("database_ready"), sm.Not("namespace_ready")}},
			{Phase: deletedPhase, Type: sm.Terminal},
			{Phase: failedPhase, Type: sm.Fault},
		},
		Settled: []sm.Settle[state, phase]{
			{State: stopped, Phase: created},
			{State: running, Phase: started},
			{State: restarting, Phase: started},
			{State: stopped, Phase: stoppedPhase},
			{State: deleted, Phase: deletedPhase, Final: true},
		},
		Rules: []sm.Rule[state, phase]{
			{State: running, Phase: created, Begin: starting},
			{State: restarting, Phase: created, Begin: starting},
			{State: deleted, Phase: created, Begin: deleting},
			{State: stopped, Phase: started, Begin: stopping},
			{State: deleted, Phase: started, Begin: deleting},
			{State: running, Phase: stoppedPhase, Begin: starting},
			{State: restarting, Phase: stoppedPhase, Begin: starting},
			{State: deleted, Phase: stoppedPhase, Begin: deleting},
			{State: deleted, Phase: failedPhase, Begin: deleting},
		},
		Requests: []sm.RequestRule[phase]{{Name: "restart",
			Serve: []sm.Edge[phase]{{From: started, To: stopping}, {From: created, To: starting}, {From: stoppedPhase, To: starting}}}},
		Refusals: []sm.RefusalRule[state, phase]{{
			States: []state{running, stopped, restarting},
			Phases: []phase{deleting, deletedPhase},
			Reason: "a gateway being deleted cannot be brought back",
		}},
	}
}

// gatewayWorld simulates what a gateway owns: documents (cron triggers, cloud
// functions, stages), the runtime domain and its routes, the instance
// (Deployment, Service), the database and the namespace.
type gatewayWorld struct {
	triggers, functions, stages int
	namespace, database         bool
	domain, routes              bool
	deployment, service         bool
	availableAt                 time.Time // when the Deployment reports an available replica
	startDelay                  time.Duration
	batch                       int // documents one delete step removes

	// deletion progress, for the ordering invariants
	deletedTriggers, deletedFunctions, deletedStages bool
}

func drawGatewayWorld(t *rapid.T) *gatewayWorld {
	return &gatewayWorld{
		triggers:   rapid.IntRange(0, 3).Draw(t, "cron triggers"),
		functions:  rapid.IntRange(0, 3).Draw(t, "cloud functions"),
		stages:     3,
		startDelay: time.Duration(rapid.Int64Range(0, int64(5*time.Minute)).Draw(t, "start delay")),
		batch:      rapid.IntRange(1, 2).Draw(t, "delete batch"),
	}
}

// deleteBatch is the "if had X { delete X; return }" pattern: a step that
// removes some documents reports progress, and Done once none are left.
func (w *gatewayWorld) deleteBatch(n *int, flag *bool) sm.Outcome {
	if *n == 0 {
		return sm.Done
	}
	*n -= min(*n, w.batch)
	*flag = true
	return sm.Progressed
}

func (w *gatewayWorld) Run(d sm.Decision[state, phase], now time.Time) (sm.Outcome, error) {
	switch d.Step {
	case "create_namespace":
		w.namespace = true
	case "create_database":
		w.database = true
	case "create_runtime_domain":
		w.domain = true
	case "create_deployment":
		if !w.deployment {
			w.deployment = true
			w.availableAt = now.Add(w.startDelay)
		}
	case "create_service":
		w.service = true
	case "activate_runtime_domain":
		w.routes = true
	case "deactivate_runtime_domain":
		w.routes = false
	case "delete_deployment":
		w.deployment = false
	case "delete_service":
		w.service = false
	case "delete_cron_triggers":
		return w.deleteBatch(&w.triggers, &w.deletedTriggers), nil
	case "delete_cloud_functions":
		return w.deleteBatch(&w.functions, &w.deletedFunctions), nil
	case "delete_stages":
		return w.deleteBatch(&w.stages, &w.deletedStages), nil
	case "delete_runtime_domain":
		w.routes, w.domain = false, false
	case "delete_instance":
		w.deployment, w.service = false, false
	case "delete_database":
		w.database = false
	case "delete_namespace":
		w.namespace = false
	default:
		return sm.FailedTerminal, fmt.Errorf("unknown step %q", d.Step)
	}
	return sm.Done, nil
}

func (w *gatewayWorld) Observe(now time.Time) []sm.Observation {
	return []sm.Observation{
		{Name: "namespace_ready", Status: w.namespace},
		{Name: "database_ready", Status: w.database},
		{Name: "runtime_domain_present", Status: w.domain},
		{Name: "deployment_available", Status: w.deployment && !now.Before(w.availableAt)},
		{Name: "instance_present", Status: w.deployment || w.service},
	}
}

// Check holds the gateway's ordering rules: routes only in front of a running
// Deployment (routes go first), a Deployment only with its database and
// namespace (the database goes after it), and the cascade's order.
func (w *gatewayWorld) Check(state, sm.Status[state, phase]) error {
	var errs []error
	if w.routes && !w.deployment {
		errs = append(errs, errors.New("routes send traffic to a missing Deployment"))
	}
	if w.deployment && (!w.database || !w.namespace) {
		errs = append(errs, errors.New("Deployment runs without its database or namespace"))
	}
	if w.deletedFunctions && w.triggers > 0 {
		errs = append(errs, errors.New("cloud functions deleted before cron triggers"))
	}
	if w.deletedStages && (w.functions > 0 || w.triggers > 0) {
		errs = append(errs, errors.New("stages deleted before cloud functions"))
	}
	return errors.Join(errs...)
}

func (w *gatewayWorld) Matches(intent state, st sm.Status[state, phase]) error {
	switch intent {
	case running, restarting:
		if !w.deployment || !w.service || !w.routes {
			return fmt.Errorf("gateway not serving: deployment %v, service %v, routes %v", w.deployment, w.service, w.routes)
		}
	case stopped:
		if w.deployment || w.service || w.routes {
			return fmt.Errorf("gateway still running: deployment %v, service %v, routes %v", w.deployment, w.service, w.routes)
		}
	case deleted:
		if w.triggers+w.functions+w.stages > 0 || w.namespace || w.database || w.domain || w.deployment || w.service {
			return fmt.Errorf("gateway deleted but resources remain: %+v", *w)
		}
	}
	return nil
}
