package platform

import (
	sm "github.com/tendhq/tend/statemachine"
)

// GatewayState is an ApiGateway's intent.
type GatewayState string

// The gateway's states.
const (
	Running    GatewayState = "Running"
	Stopped    GatewayState = "Stopped"
	Restarting GatewayState = "Restarting"
	Deleted    GatewayState = "Deleted"
)

// GatewayPhase is an ApiGateway's progress.
type GatewayPhase string

// The gateway's phases.
const (
	GatewayCreating GatewayPhase = "Creating"
	GatewayCreated  GatewayPhase = "Created"
	GatewayStarting GatewayPhase = "Starting"
	GatewayStarted  GatewayPhase = "Started"
	GatewayStopping GatewayPhase = "Stopping"
	GatewayStopped  GatewayPhase = "Stopped"
	GatewayDeleting GatewayPhase = "Deleting"
	GatewayDeleted  GatewayPhase = "Deleted"
	// GatewayFailed is the Fault phase: an operation that failed terminally,
	// ran past its deadline or used up its attempts waits here for an
	// operator; deleting the gateway still cleans it up.
	GatewayFailed GatewayPhase = "Failed"
)

// DomainState is a RuntimeDomain's intent.
type DomainState string

// The runtime domain's states.
const (
	Active        DomainState = "Active"
	Inactive      DomainState = "Inactive"
	DomainRemoved DomainState = "Deleted"
)

// DomainPhase is a RuntimeDomain's progress.
type DomainPhase string

// The runtime domain's phases.
const (
	DomainCreating DomainPhase = "Creating"
	DomainCreated  DomainPhase = "Created"
	DomainDeleting DomainPhase = "Deleting"
	DomainDeleted  DomainPhase = "Deleted"
	// DomainRenewing renews the custom domain's certificate, when its
	// renewal timer is due.
	DomainRenewing DomainPhase = "Renewing"
	// DomainFailed is the runtime domain's Fault phase.
	DomainFailed DomainPhase = "Failed"
)

// The gateway's steps, by phase. Each is an idempotent action of the gateway's
// controller (see the package documentation).
const (
	// Creating.
	StepCreateNamespace     = "create_namespace"
	StepCreateDatabase      = "create_database"
	StepCreateStages        = "create_stages"
	StepCreateRuntimeDomain = "create_runtime_domain"
	// Starting.
	StepCreateInstance          = "create_instance"
	StepActivateRuntimeDomain   = "activate_runtime_domain"
	StepDeactivateRuntimeDomain = "deactivate_runtime_domain"
	// Stopping (and Deleting).
	StepDeleteInstance = "delete_instance"
	// Deleting: the ordered cascade.
	StepDeleteCronTriggers   = "delete_cron_triggers"
	StepDeleteCloudFunctions = "delete_cloud_functions"
	StepDeleteStages         = "delete_stages"
	StepDeleteEnvironments   = "delete_environments"
	StepDeleteRuntimeDomain  = "delete_runtime_domain"
	StepDeleteDatabase       = "delete_database"
	StepDeleteNamespace      = "delete_namespace"
)

// CascadeSteps are the steps of the gateway's Deleting phase, in order.
var CascadeSteps = []string{
	StepDeleteCronTriggers, StepDeleteCloudFunctions, StepDeleteStages, StepDeleteEnvironments,
	StepDeleteRuntimeDomain, StepDeleteInstance, StepDeleteDatabase, StepDeleteNamespace,
}

// The runtime domain's steps.
const (
	StepCreateTLS          = "create_tls"
	StepCreatePluginConfig = "create_plugin_config"
	StepCreateRoutes       = "create_routes"
	StepDeleteRoutes       = "delete_routes"
	StepDeletePluginConfig = "delete_plugin_config"
	StepDeleteTLS          = "delete_tls"
	StepRenewCertificate   = "renew_certificate"
)

// RequestRestart is the gateway's one-shot restart request; TimerRenewCertificate
// is the runtime domain's certificate renewal.
const (
	RequestRestart        = "restart"
	TimerRenewCertificate = "renew_certificate"
)

// The conditions the machines' completions are judged from, observed by the
// controllers' probes.
const (
	// Gateway.
	CondNamespaceReady       = "namespace_ready"        // the Namespace exists and is not Terminating
	CondNamespacePresent     = "namespace_present"      // the Namespace or ConfigMap still exists
	CondDatabaseReady        = "database_ready"         // the database and its user exist
	CondRuntimeDomainPresent = "runtime_domain_present" // the RuntimeDomain document exists
	CondRoutesReady          = "routes_ready"           // the RuntimeDomain is Created for an Active intent
	CondInstanceAvailable    = "instance_available"     // the Deployment has an available replica and the Service is ready
	CondInstancePresent      = "instance_present"       // the Deployment or the Service still exists
	// RuntimeDomain.
	CondResourcesReady   = "resources_ready"   // every route, TLS secret and certificate is ready
	CondResourcesPresent = "resources_present" // any route, TLS secret, plugin config or certificate still exists
)

// GatewayDefinition declares the ApiGateway machine: creation, start, stop,
// restart as one stop-then-start cycle, and the ordered, checkpointed cascade
// deletion past a point of no return. [New] builds it; the build rejects any
// (State, Phase) pair no rule or settlement covers, and any pair that could
// end up somewhere it never settles.
//
// Every operation is bounded (the machine's default deadline): one that
// never completes — a Deployment that never becomes available — ends in
// Failed with the reason. Deletion and stopping do not wait for an operation
// that may never complete: they abort it at its next step boundary.
//
// Restarting is Running plus a restart request: each write of Restarting
// carries a new token, served once — from Started by one stop-then-start
// cycle, from Created or Stopped by the start the intent begins anyway. A
// Started gateway whose Deployment or Service is no longer available (deleted
// behind the controller's back) drifts, and Starting repairs it.
func GatewayDefinition() sm.Definition[GatewayState, GatewayPhase] {
	return sm.Definition[GatewayState, GatewayPhase]{
		Name:    KindApiGateway,
		States:  []GatewayState{Running, Stopped, Restarting, Deleted},
		Initial: GatewayCreating,
		Phases: []sm.PhaseSpec[GatewayPhase]{
			{Phase: GatewayCreating, Type: sm.Transitional, Then: GatewayCreated,
				Steps: []string{StepCreateNamespace, StepCreateDatabase, StepCreateStages, StepCreateRuntimeDomain},
				Completion: []sm.Require{sm.Is(CondNamespaceReady), sm.Is(CondDatabaseReady),
					sm.Is(CondRuntimeDomainPresent)}},
			{Phase: GatewayCreated},
			{Phase: GatewayStarting, Type: sm.Transitional, Then: GatewayStarted,
				Steps:      []string{StepCreateInstance, StepActivateRuntimeDomain},
				Completion: []sm.Require{sm.Is(CondInstanceAvailable), sm.Is(CondRoutesReady)}},
			{Phase: GatewayStarted, Health: []sm.Require{sm.Is(CondInstanceAvailable)}, Repair: GatewayStarting},
			{Phase: GatewayStopping, Type: sm.Transitional, Then: GatewayStopped,
				Steps:      []string{StepDeactivateRuntimeDomain, StepDeleteInstance},
				Completion: []sm.Require{sm.Not(CondRoutesReady), sm.Not(CondInstancePresent)}},
			{Phase: GatewayStopped},
			{Phase: GatewayDeleting, Type: sm.Transitional, NoReturn: true, Then: GatewayDeleted,
				Steps: CascadeSteps,
				Completion: []sm.Require{sm.Not(CondRuntimeDomainPresent), sm.Not(CondInstancePresent),
					sm.Not(CondDatabaseReady), sm.Not(CondNamespacePresent)}},
			{Phase: GatewayDeleted, Type: sm.Terminal},
			{Phase: GatewayFailed, Type: sm.Fault},
		},
		Settled: []sm.Settle[GatewayState, GatewayPhase]{
			{State: Running, Phase: GatewayStarted},
			// Restarting is Running plus a restart request, served by Requests.
			{State: Restarting, Phase: GatewayStarted},
			{State: Stopped, Phase: GatewayStopped},
			{State: Deleted, Phase: GatewayDeleted, Final: true},
		},
		Rules: []sm.Rule[GatewayState, GatewayPhase]{
			{State: Running, Phase: GatewayCreated, Begin: GatewayStarting},
			{State: Restarting, Phase: GatewayCreated, Begin: GatewayStarting},
			// A gateway created stopped takes its routes down: Stopped means
			// no traffic, whatever the phase it is reached from.
			{State: Stopped, Phase: GatewayCreated, Begin: GatewayStopping},
			{State: Deleted, Phase: GatewayCreated, Begin: GatewayDeleting},
			{State: Stopped, Phase: GatewayStarted, Begin: GatewayStopping},
			{State: Deleted, Phase: GatewayStarted, Begin: GatewayDeleting},
			{State: Running, Phase: GatewayStopped, Begin: GatewayStarting},
			{State: Restarting, Phase: GatewayStopped, Begin: GatewayStarting},
			// Without this rule a stopped gateway asked to be deleted would
			// sit for ever, its stages and database never cleaned up.
			{State: Deleted, Phase: GatewayStopped, Begin: GatewayDeleting},
			{State: Deleted, Phase: GatewayFailed, Begin: GatewayDeleting},
		},
		Refusals: []sm.RefusalRule[GatewayState, GatewayPhase]{{
			States: []GatewayState{Running, Stopped, Restarting},
			Phases: []GatewayPhase{GatewayDeleting, GatewayDeleted},
			Reason: "a gateway being deleted cannot be brought back",
		}},
		Requests: []sm.RequestRule[GatewayPhase]{{
			Name: RequestRestart,
			Serve: []sm.Edge[GatewayPhase]{
				{From: GatewayStarted, To: GatewayStopping},
				{From: GatewayCreated, To: GatewayStarting},
				{From: GatewayStopped, To: GatewayStarting},
			},
		}},
		Aborts: []sm.AbortRule[GatewayState, GatewayPhase]{
			{State: Deleted, Phase: GatewayCreating, To: GatewayDeleting},
			{State: Deleted, Phase: GatewayStarting, To: GatewayDeleting},
			{State: Deleted, Phase: GatewayStopping, To: GatewayDeleting},
			{State: Stopped, Phase: GatewayStarting, To: GatewayStopping},
		},
	}
}

// DomainDefinition declares the RuntimeDomain machine: its routes, plugin
// config, TLS secrets and certificate are created while it is Active and
// removed when it becomes Inactive or Deleted. A custom domain's certificate
// is renewed by a timer, due a while before it expires. Deleting is a point of no
// return except for the one sanctioned cycle Deleted → Creating, taken when its
// gateway starts again.
func DomainDefinition() sm.Definition[DomainState, DomainPhase] {
	return sm.Definition[DomainState, DomainPhase]{
		Name:    KindRuntimeDomain,
		States:  []DomainState{Active, Inactive, DomainRemoved},
		Initial: DomainCreating,
		Phases: []sm.PhaseSpec[DomainPhase]{
			{Phase: DomainCreating, Type: sm.Transitional, Then: DomainCreated,
				Steps:      []string{StepCreateTLS, StepCreatePluginConfig, StepCreateRoutes},
				Completion: []sm.Require{sm.Is(CondResourcesReady)}},
			{Phase: DomainCreated},
			{Phase: DomainRenewing, Type: sm.Transitional, Then: DomainCreated,
				Steps:      []string{StepRenewCertificate},
				Completion: []sm.Require{sm.Is(CondResourcesReady)}},
			{Phase: DomainDeleting, Type: sm.Transitional, NoReturn: true, Then: DomainDeleted,
				Steps:      []string{StepDeleteRoutes, StepDeletePluginConfig, StepDeleteTLS},
				Completion: []sm.Require{sm.Not(CondResourcesPresent)}},
			{Phase: DomainDeleted},
			{Phase: DomainFailed, Type: sm.Fault},
		},
		Settled: []sm.Settle[DomainState, DomainPhase]{
			{State: Active, Phase: DomainCreated},
			{State: Inactive, Phase: DomainDeleted},
			{State: DomainRemoved, Phase: DomainDeleted, Final: true},
		},
		Rules: []sm.Rule[DomainState, DomainPhase]{
			{State: Inactive, Phase: DomainCreated, Begin: DomainDeleting},
			{State: DomainRemoved, Phase: DomainCreated, Begin: DomainDeleting},
			{State: Active, Phase: DomainDeleted, Begin: DomainCreating},
			{State: DomainRemoved, Phase: DomainFailed, Begin: DomainDeleting},
		},
		// A domain whose resources never become ready does not hold up its
		// gateway's stop or deletion.
		Aborts: []sm.AbortRule[DomainState, DomainPhase]{
			{State: Inactive, Phase: DomainCreating, To: DomainDeleting},
			{State: DomainRemoved, Phase: DomainCreating, To: DomainDeleting},
			{State: Inactive, Phase: DomainRenewing, To: DomainDeleting},
			{State: DomainRemoved, Phase: DomainRenewing, To: DomainDeleting},
		},
		Timers: []sm.Timer[DomainPhase]{{Name: TimerRenewCertificate, Phase: DomainCreated, Begin: DomainRenewing}},
		Cycles: []sm.Edge[DomainPhase]{{From: DomainDeleted, To: DomainCreating}},
	}
}
